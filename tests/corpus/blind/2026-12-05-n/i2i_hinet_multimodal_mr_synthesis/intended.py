"""HiNet-style multi-modal MR image synthesis (two input modalities -> a third), trained as a GAN.

Reduced from https://github.com/taozh2017/HiNet/issues/24 (HiNet_SynthModel.py): a
`LatentSynthModel` with a fusion generator that also reconstructs both inputs, a patch
discriminator, two Adam optimizers, LSGAN (MSE) adversarial loss and L1 identity losses.
Each batch trains the generator first, then the discriminator. Synthetic volumes, CPU.
"""

import torch
import torch.nn as nn

torch.manual_seed(0)


class ModalityEncoder(nn.Module):
    def __init__(self, ch=8):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, ch, 3, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(ch, ch, 3, padding=1))

    def forward(self, x):
        return self.body(x)


class Multi_modal_generator(nn.Module):
    def __init__(self, ch=8):
        super().__init__()
        self.enc1 = ModalityEncoder(ch)
        self.enc2 = ModalityEncoder(ch)
        self.fusion = nn.Sequential(nn.Conv2d(2 * ch, ch, 3, padding=1), nn.LeakyReLU(0.2))
        self.dec_fused = nn.Conv2d(ch, 1, 3, padding=1)
        self.dec1 = nn.Conv2d(ch, 1, 3, padding=1)
        self.dec2 = nn.Conv2d(ch, 1, 3, padding=1)

    def forward(self, x_fu):
        x1, x2 = x_fu[:, :1], x_fu[:, 1:]
        f1, f2 = self.enc1(x1), self.enc2(x2)
        fused = self.fusion(torch.cat([f1, f2], dim=1))
        return torch.tanh(self.dec_fused(fused)), torch.tanh(self.dec1(f1)), torch.tanh(self.dec2(f2))


class Discriminator(nn.Module):
    def __init__(self, ch=8):
        super().__init__()
        self.model = nn.Sequential(
            nn.Conv2d(1, ch, 4, stride=2, padding=1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(ch, 1, 3, padding=1),
        )

    def forward(self, img):
        return self.model(img)


class Options:
    lr = 2e-4
    b1, b2 = 0.5, 0.999
    epochs = 2
    batch_size = 2


def make_batches(n_batches, batch_size):
    data = []
    for _ in range(n_batches):
        t1 = torch.rand(batch_size, 1, 12, 12)
        t2 = 0.5 * t1 + 0.5 * torch.rand(batch_size, 1, 12, 12)
        flair = (t1 + t2) / 2
        data.append((t1 * 2 - 1, t2 * 2 - 1, flair * 2 - 1))
    return data


class LatentSynthModel:
    def __init__(self, opt):
        self.opt = opt
        self.generator = Multi_modal_generator()
        self.discrimator = Discriminator()

    def train(self, train_loader):
        optimizer_D = torch.optim.Adam(self.discrimator.parameters(), lr=self.opt.lr, betas=(self.opt.b1, self.opt.b2))
        optimizer_G = torch.optim.Adam(self.generator.parameters(), lr=self.opt.lr, betas=(self.opt.b1, self.opt.b2))
        criterion_GAN = nn.MSELoss()
        criterion_identity = nn.L1Loss()

        for epoch in range(self.opt.epochs):
            for ii, (x1, x2, x3) in enumerate(train_loader):
                fake = torch.zeros([x1.shape[0], 1, 6, 6], requires_grad=False)
                valid = torch.ones([x1.shape[0], 1, 6, 6], requires_grad=False)
                x_fu = torch.cat([x1, x2], dim=1)

                # ----------------------
                #  Train generator
                # ----------------------
                optimizer_G.zero_grad()
                x_fake, x1_re, x2_re = self.generator(x_fu)

                loss_re3 = criterion_identity(x_fake, x3)
                loss_re1 = criterion_identity(x1_re, x1)
                loss_re2 = criterion_identity(x2_re, x2)
                loss_GAN = criterion_GAN(self.discrimator(x_fake), valid)
                loss_G = loss_GAN + 100 * loss_re3 + 20 * loss_re1 + 20 * loss_re2

                loss_G.backward(retain_graph=True)
                optimizer_G.step()

                # ----------------------
                #  Train Discriminators
                # ----------------------
                optimizer_D.zero_grad()
                loss_real = criterion_GAN(self.discrimator(x3), valid)
                loss_fake = criterion_GAN(self.discrimator(x_fake.detach()), fake)
                loss_D = (loss_real + loss_fake) / 2

                loss_D.backward(retain_graph=True)
                optimizer_D.step()

                print(f"[Epoch {epoch}/{self.opt.epochs}] [Batch {ii}] D_loss: {loss_D.item():.4f} G_loss: {loss_G.item():.4f}")


if __name__ == "__main__":
    opt = Options()
    train_loader = make_batches(4, opt.batch_size)
    model = LatentSynthModel(opt)
    model.train(train_loader)
