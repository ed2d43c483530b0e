"""MelGAN vocoder training (generator + 3-scale weight-normalised discriminator, hinge loss, feature matching).

Reduced from https://github.com/vlomme/AGAIN-MelGan-Voice-Cloning/issues/2: the author
trains the repository's MelGAN (melgan.py `train()`: GeneratorMel from mel spectrograms,
MultiScale discriminator of three weight-norm Conv1d discriminators, hinge adversarial
loss plus L1 feature matching, one Adam optimizer per network) for voice cloning.
Synthetic mel/audio pairs here, small sizes, CPU.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from torch.nn.utils import weight_norm


class hp:
    n_mels = 16
    hop = 32
    segment = 256
    batch_size = 4
    lr = 1e-4
    betas1 = 0.5
    betas2 = 0.9
    lambda_feat = 10
    max_epoch = 2


torch.manual_seed(0)


class ResStack(nn.Module):
    def __init__(self, channel):
        super().__init__()
        self.blocks = nn.ModuleList([
            nn.Sequential(
                nn.LeakyReLU(0.2),
                nn.ReflectionPad1d(3 ** i),
                weight_norm(nn.Conv1d(channel, channel, kernel_size=3, dilation=3 ** i)),
                nn.LeakyReLU(0.2),
                weight_norm(nn.Conv1d(channel, channel, kernel_size=1)),
            )
            for i in range(3)
        ])
        self.shortcuts = nn.ModuleList([weight_norm(nn.Conv1d(channel, channel, kernel_size=1)) for _ in range(3)])

    def forward(self, x):
        for block, shortcut in zip(self.blocks, self.shortcuts):
            x = shortcut(x) + block(x)
        return x


class GeneratorMel(nn.Module):
    def __init__(self, n_mels):
        super().__init__()
        self.generator = nn.Sequential(
            nn.ReflectionPad1d(3),
            weight_norm(nn.Conv1d(n_mels, 64, kernel_size=7)),
            nn.LeakyReLU(0.2),
            weight_norm(nn.ConvTranspose1d(64, 32, kernel_size=16, stride=8, padding=4)),
            ResStack(32),
            nn.LeakyReLU(0.2),
            weight_norm(nn.ConvTranspose1d(32, 16, kernel_size=8, stride=4, padding=2)),
            ResStack(16),
            nn.LeakyReLU(0.2),
            nn.ReflectionPad1d(3),
            weight_norm(nn.Conv1d(16, 1, kernel_size=7)),
            nn.Tanh(),
        )

    def forward(self, mel):
        return self.generator(mel)


def decoder_sequential(input_size, output_size, *args, **kwargs):
    return nn.Sequential(
        weight_norm(nn.Conv1d(input_size, output_size, *args, **kwargs)),
        nn.LeakyReLU(0.2, inplace=True),
    )


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.discriminator = nn.ModuleList([
            nn.Sequential(
                nn.ReflectionPad1d(7),
                weight_norm(nn.Conv1d(1, 16, kernel_size=15)),
                nn.LeakyReLU(0.2, inplace=True),
            ),
            decoder_sequential(16, 32, kernel_size=41, stride=4, padding=20, groups=4),
            decoder_sequential(32, 32, kernel_size=41, stride=4, padding=20, groups=8),
            nn.Sequential(
                weight_norm(nn.Conv1d(32, 32, kernel_size=5, padding=2)),
                nn.LeakyReLU(0.2, inplace=True),
            ),
            weight_norm(nn.Conv1d(32, 1, kernel_size=3, padding=1)),
        ])

    def forward(self, x):
        feature_map = []
        for module in self.discriminator:
            x = module(x)
            feature_map.append(x)
        return feature_map


class MultiScale(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.ModuleList([Discriminator() for _ in range(3)])
        self.avgpool = nn.AvgPool1d(kernel_size=4, stride=2, padding=1, count_include_pad=False)

    def forward(self, x):
        result = []
        for idx, module in enumerate(self.block):
            result.append(module(x))
            if idx <= 1:
                x = self.avgpool(x)
        return result


class MelGanDataset(torch.utils.data.Dataset):
    """Synthetic (mel, audio) pairs standing in for the preprocessed .mel files."""

    def __init__(self, n=8):
        self.mels = torch.randn(n, hp.n_mels, hp.segment // hp.hop)
        self.audio = torch.tanh(torch.randn(n, 1, hp.segment))

    def __len__(self):
        return len(self.mels)

    def __getitem__(self, i):
        return self.mels[i], self.audio[i]


def train():
    trainset = MelGanDataset()
    train_loader = torch.utils.data.DataLoader(trainset, batch_size=hp.batch_size, shuffle=False, drop_last=True)

    # create Generator and 3*Discriminator
    G = GeneratorMel(hp.n_mels)
    D = MultiScale()
    g_optimizer = optim.Adam(G.parameters(), lr=hp.lr, betas=(hp.betas1, hp.betas2))
    d_optimizer = optim.Adam(D.parameters(), lr=hp.lr, betas=(hp.betas1, hp.betas2))

    step = 0
    for epoch in range(hp.max_epoch):
        for (mel, audio) in train_loader:
            # audio from the spectrogram
            fake_audio = G(mel)
            # discriminator response to the generated audio, without gradients to G
            d_fake_detach = D(fake_audio.detach())
            # discriminator response to the generated audio
            d_fake = D(fake_audio)
            # discriminator response to the real audio
            d_real = D(audio)

            # ------------ Discriminator ---------------
            d_loss_real = 0
            for scale in d_real:
                d_loss_real += F.relu(1 - scale[-1]).mean()

            d_loss_fake = 0
            for scale in d_fake_detach:
                d_loss_fake += F.relu(1 + scale[-1]).mean()

            d_loss = d_loss_real + d_loss_fake

            D.zero_grad()
            d_loss.backward()
            d_optimizer.step()

            # --------------- Generator ----------------------
            g_loss = 0
            for scale in d_fake:
                g_loss += -scale[-1].mean()

            # feature matching between responses to real and generated audio
            feature_loss = 0
            for i in range(len(d_fake)):
                for j in range(len(d_fake[i]) - 1):
                    feature_loss += F.l1_loss(d_fake[i][j], d_real[i][j].detach())

            g_loss += hp.lambda_feat * feature_loss

            G.zero_grad()
            g_loss.backward()
            g_optimizer.step()

            step += 1
            print('Epoch: %-5d, Step: %-7d, D_loss: %.05f, G_loss: %.05f' % (epoch, step, d_loss, g_loss))


if __name__ == "__main__":
    train()
