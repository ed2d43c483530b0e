"""Adversarial representation learning + graph fusion for multimodal sentiment (ARGF-style, MOSI setup).

Reduced from https://github.com/TmacMai/ARGF_multimodal_fusion/issues/2: the
author runs ARGF's ``train_mosi_graph.py`` on CMU-MOSI features under Python 3
(the inplace LeakyReLUs already removed). Three modality encoders (audio,
video, text) map into a shared space; per batch the script runs four stages,
each with its own Adam optimizer: an encoder-decoder stage (reconstruction +
fooling the discriminator into taking video/text codes for audio codes), a
per-modality classifier stage on the encodings, a discriminator stage, and a
graph-fusion classifier on the three encodings. Here: synthetic features,
BCE/L1 losses as in the original.
"""

import itertools

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class Encoder_5(nn.Module):
    def __init__(self, in_size, hidden_size, dropout):
        super().__init__()
        self.norm2 = nn.BatchNorm1d(in_size * 10)
        self.norm3 = nn.BatchNorm1d(hidden_size * 10)
        self.drop = nn.Dropout(p=dropout)
        self.linear_1 = nn.Linear(in_size, in_size * 10)
        self.linear_2 = nn.Linear(in_size * 10, hidden_size * 10)
        self.linear_3 = nn.Linear(hidden_size * 10, hidden_size)
        self.linear_4 = nn.Linear(hidden_size, hidden_size)

    def forward(self, x):
        y = self.drop(torch.relu(self.norm2(self.linear_1(x))))
        y = self.drop(torch.relu(self.norm3(self.linear_2(y))))
        y = torch.tanh(self.linear_3(y))
        return torch.tanh(self.linear_4(y))


class Decoder2(nn.Module):
    def __init__(self, in_size, out_size):
        super().__init__()
        self.model = nn.Sequential(
            nn.Linear(in_size, 64),
            nn.Dropout(0.5),
            nn.LeakyReLU(0.2),
            nn.Linear(64, 32),
            nn.BatchNorm1d(32),
            nn.LeakyReLU(0.2),
            nn.Linear(32, out_size),
            nn.Tanh(),
        )

    def forward(self, z):
        return self.model(z)


class Discriminator(nn.Module):
    def __init__(self, in_size):
        super().__init__()
        self.model = nn.Sequential(
            nn.Linear(in_size, 64),
            nn.LeakyReLU(0.2),
            nn.Linear(64, 16),
            nn.Tanh(),
            nn.Linear(16, 1),
            nn.Sigmoid(),
        )

    def forward(self, z):
        return self.model(z)


class classifier3(nn.Module):
    def __init__(self, in_size, output_dim, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(p=dropout)
        self.linear_1 = nn.Linear(in_size, output_dim * 10)
        self.linear_2 = nn.Linear(output_dim * 10, output_dim)

    def forward(self, x):
        return self.linear_2(self.drop(torch.relu(self.linear_1(x))))


class graph11_new(nn.Module):
    """Graph fusion: unimodal nodes, pairwise (bimodal) nodes and a trimodal node, weighted by learned attention."""

    def __init__(self, in_size, output_dim):
        super().__init__()
        self.attention = nn.Linear(in_size, 1)
        self.bimodal = nn.Linear(2 * in_size, in_size)
        self.trimodal = nn.Linear(3 * in_size, in_size)
        self.out = nn.Sequential(nn.Linear(in_size, 32), nn.ReLU(), nn.Linear(32, output_dim))

    def forward(self, fusion):  # fusion: (batch, 3, in_size)
        a, v, t = fusion[:, 0], fusion[:, 1], fusion[:, 2]
        bi = torch.stack(
            [
                torch.tanh(self.bimodal(torch.cat([a, v], 1))),
                torch.tanh(self.bimodal(torch.cat([a, t], 1))),
                torch.tanh(self.bimodal(torch.cat([v, t], 1))),
            ],
            1,
        )
        tri = torch.tanh(self.trimodal(torch.cat([a, v, t], 1))).unsqueeze(1)
        nodes = torch.cat([fusion, bi, tri], 1)
        weights = torch.softmax(self.attention(nodes), dim=1)
        return self.out((weights * nodes).sum(1)), weights


def main():
    audio_in, video_in, text_in, output_dim = 5, 20, 30, 1
    n = 96
    x_audio = torch.randn(n, audio_in)
    x_video = torch.randn(n, video_in)
    x_text = torch.randn(n, text_in)
    labels = torch.tanh(x_audio[:, :1] + x_text[:, :1])
    train_set = TensorDataset(x_audio, x_video, x_text, labels)

    ahid, adr, lr, decay, alpha = 8, 0.1, 1e-3, 0.005, 0.001
    batch_sz = 32
    encoder_a = Encoder_5(audio_in, ahid, adr)
    encoder_v = Encoder_5(video_in, ahid, adr)
    encoder_l = Encoder_5(text_in, ahid, adr)
    decoder_a = Decoder2(ahid, audio_in)
    decoder_v = Decoder2(ahid, video_in)
    decoder_l = Decoder2(ahid, text_in)
    discriminator = Discriminator(ahid)
    classifier = graph11_new(in_size=ahid, output_dim=output_dim)
    classifier_3 = classifier3(in_size=ahid, output_dim=output_dim)
    b1, b2 = 0.5, 0.999

    criterion = nn.L1Loss(reduction="sum")
    adversarial_loss = nn.BCELoss()
    pixelwise_loss = nn.L1Loss(reduction="sum")

    optimizer_G = torch.optim.Adam(
        itertools.chain(
            encoder_a.parameters(),
            encoder_v.parameters(),
            encoder_l.parameters(),
            decoder_a.parameters(),
            decoder_l.parameters(),
            decoder_v.parameters(),
        ),
        weight_decay=decay,
        lr=lr,
        betas=(b1, b2),
    )
    optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=lr, betas=(b1, b2), weight_decay=decay)
    optimizer_C = torch.optim.Adam(classifier.parameters(), lr=lr, betas=(b1, b2), weight_decay=decay)
    optimizer_E = torch.optim.Adam(
        itertools.chain(
            encoder_a.parameters(), encoder_v.parameters(), encoder_l.parameters(), classifier_3.parameters()
        ),
        lr=lr,
        betas=(b1, b2),
        weight_decay=decay,
    )

    train_iterator = DataLoader(train_set, batch_size=batch_sz, shuffle=True)
    for e in range(2):
        avg_train_loss = 0.0
        for x_a, x_v, x_t, y in train_iterator:
            # encoder-decoder
            optimizer_G.zero_grad()
            a_en = encoder_a(x_a)
            v_en = encoder_v(x_v)
            l_en = encoder_l(x_t)
            a_de = decoder_a(a_en)
            v_de = decoder_v(v_en)
            l_de = decoder_l(l_en)

            rl1 = pixelwise_loss(a_de, x_a) + pixelwise_loss(v_de, x_v) + pixelwise_loss(l_de, x_t)
            valid = torch.ones(y.shape[0], 1)
            fake = torch.zeros(y.shape[0], 1)

            g_loss = alpha * (
                adversarial_loss(discriminator(l_en), valid) + adversarial_loss(discriminator(v_en), valid)
            ) + (1 - alpha) * rl1
            g_loss.backward(retain_graph=True)
            optimizer_G.step()

            # classifier: encode again with the encoders optimizer_G just updated
            optimizer_E.zero_grad()
            a_en = encoder_a(x_a)
            v_en = encoder_v(x_v)
            l_en = encoder_l(x_t)
            a = classifier_3(a_en)
            v = classifier_3(v_en)
            t = classifier_3(l_en)
            c_loss = criterion(a, y) + criterion(t, y) + criterion(v, y)
            c_loss.backward(retain_graph=True)
            optimizer_E.step()

            # discriminator: encode again with the encoders optimizer_E just updated
            optimizer_D.zero_grad()
            a_en = encoder_a(x_a)
            v_en = encoder_v(x_v)
            l_en = encoder_l(x_t)
            real_loss = adversarial_loss(discriminator(a_en), valid)
            fake_loss = adversarial_loss(discriminator(v_en), fake) + adversarial_loss(discriminator(l_en), fake)
            d_loss = 0.5 * (real_loss + fake_loss)
            d_loss.backward(retain_graph=True)
            optimizer_D.step()

            # fusion
            v_a = torch.cat([a_en.unsqueeze(1), v_en.unsqueeze(1)], 1)
            fusion = torch.cat([v_a, l_en.unsqueeze(1)], 1)

            optimizer_C.zero_grad()
            output, _ = classifier(fusion)
            loss = criterion(output, y)
            loss.backward()
            optimizer_C.step()
            avg_train_loss += loss.item() / len(train_set)

        print(f"Epoch: {e} loss: {avg_train_loss:.4f}")


if __name__ == "__main__":
    main()
