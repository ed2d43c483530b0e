"""Vid-ODE-style continuous-time video extrapolation with an image and a sequence discriminator.

Reduced from https://github.com/psh01087/Vid-ODE/issues/6 (main.py `train`, models/gan.py):
the generator (a conv encoder, an ODE-like latent update and a conv decoder) predicts the
next frames of a clip and returns its MSE loss; two discriminators (per frame and per
sequence) share one Adamax optimizer, the generator has its own. The adversarial terms are
added to the generator's loss; then D is trained, then G. Synthetic moving-square clips, CPU.
"""

import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)


class ConvNormAct(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, stride, padding):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(in_ch, out_ch, kernel_size, stride, padding),
            nn.InstanceNorm2d(out_ch),
            nn.LeakyReLU(0.2),
        )

    def forward(self, x):
        return self.main(x)


class Discriminator(nn.Module):
    def __init__(self, in_ch, seq=False):
        super().__init__()
        self.seq = seq
        self.layer_1 = nn.Sequential(nn.Conv2d(in_ch, 8, 4, stride=2, padding=1, bias=False), nn.LeakyReLU(0.2))
        self.layer_2 = ConvNormAct(8, 16, 4, stride=2, padding=1)
        self.last_conv = nn.Conv2d(16, 1, 3, stride=1, padding=1, bias=False)

    def forward(self, x):
        return self.last_conv(self.layer_2(self.layer_1(x)))

    def rearrange_seq(self, real, fake, input_real, only_fake=True):
        b, t, c, h, w = fake.size()
        fake_seqs = torch.cat(
            [torch.cat([input_real[:, i:, ...], fake[:, : i + 1, ...]], dim=1) for i in range(t)], dim=0
        ).view(b * t, -1, h, w)
        if only_fake:
            return fake_seqs
        real_seqs = torch.cat(
            [torch.cat([input_real[:, i:, ...], real[:, : i + 1, ...]], dim=1) for i in range(t)], dim=0
        ).view(b * t, -1, h, w)
        return real_seqs, fake_seqs

    def netD_adv_loss(self, real, fake, input_real):
        if self.seq:
            real, fake = self.rearrange_seq(real, fake, input_real, only_fake=False)
        else:
            b, t, c, h, w = fake.size()
            real = real.contiguous().view(-1, c, h, w)
            fake = fake.contiguous().view(-1, c, h, w)
        pred_fake = self.forward(fake.detach())
        pred_real = self.forward(real)
        loss_fake = torch.mean(pred_fake**2)
        loss_real = torch.mean((pred_real - torch.ones_like(pred_real)) ** 2)
        return (loss_real + loss_fake) * 0.5

    def netG_adv_loss(self, fake, input_real):
        b, t, c, h, w = fake.size()
        if self.seq:
            fake = self.rearrange_seq(None, fake, input_real, only_fake=True)
        else:
            fake = fake.contiguous().view(-1, c, h, w)
        pred_fake = self.forward(fake)
        return torch.mean((pred_fake - torch.ones_like(pred_fake)) ** 2)


def create_netD(opt):
    seq_len = opt.sample_size // 2 + 1
    netD_img = Discriminator(in_ch=3, seq=False)
    netD_seq = Discriminator(in_ch=3 * seq_len, seq=True)
    optimizer_netD = optim.Adamax(list(netD_img.parameters()) + list(netD_seq.parameters()), lr=opt.lr)
    return netD_img, netD_seq, optimizer_netD


class VidODE(nn.Module):
    """Encode the observed frames, evolve the latent with Euler steps of a learned field, decode."""

    def __init__(self, ch=8, n_steps=2):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, ch, 3, padding=1), nn.Tanh())
        self.ode_func = nn.Sequential(nn.Conv2d(ch, ch, 3, padding=1), nn.Tanh(), nn.Conv2d(ch, ch, 3, padding=1))
        self.decoder = nn.Conv2d(ch, 3, 3, padding=1)
        self.n_steps = n_steps

    def compute_all_losses(self, batch_dict):
        observed = batch_dict["observed_data"]
        b, t, c, hh, ww = observed.shape
        h0 = self.encoder(observed.reshape(b * t, c, hh, ww)).view(b, t, -1, hh, ww).mean(dim=1)
        frames = []
        h = h0
        for _ in range(batch_dict["data_to_predict"].shape[1]):
            for _ in range(self.n_steps):
                h = h + 0.5 * self.ode_func(h)
            frames.append(torch.sigmoid(self.decoder(h)))
        pred_y = torch.stack(frames, dim=1)
        loss = torch.mean((pred_y - batch_dict["data_to_predict"]) ** 2)
        return {"loss": loss, "pred_y": pred_y}


class Options:
    lr = 1e-3
    sample_size = 6
    lamb_adv = 0.003
    epoch = 2
    batch_size = 2


def moving_square_clips(n_batches, batch_size, n_frames=6, size=16):
    batches = []
    for _ in range(n_batches):
        clips = torch.zeros(batch_size, n_frames, 3, size, size)
        for b in range(batch_size):
            x0, y0 = torch.randint(0, size - 6, (2,)).tolist()
            color = torch.rand(3, 1, 1)
            for t in range(n_frames):
                x = min(x0 + t, size - 4)
                clips[b, t, :, y0 : y0 + 4, x : x + 4] = color
        batches.append({"observed_data": clips[:, : n_frames // 2], "data_to_predict": clips[:, n_frames // 2 :]})
    return batches


def train(opt, netG, train_batches):
    optimizer_netG = optim.Adamax(netG.parameters(), lr=opt.lr)
    netD_img, netD_seq, optimizer_netD = create_netD(opt)
    total_step = 0
    for epoch in range(opt.epoch):
        for batch_dict in train_batches:
            res = netG.compute_all_losses(batch_dict)
            loss_netG = res["loss"]

            # Compute Adversarial Loss
            real = batch_dict["data_to_predict"]
            fake = res["pred_y"]
            input_real = batch_dict["observed_data"]

            loss_netD = opt.lamb_adv * netD_seq.netD_adv_loss(real, fake, input_real)
            loss_netD += opt.lamb_adv * netD_img.netD_adv_loss(real, fake, None)

            loss_adv_netG = opt.lamb_adv * netD_seq.netG_adv_loss(fake, input_real)
            loss_adv_netG += opt.lamb_adv * netD_img.netG_adv_loss(fake, None)
            loss_netG += loss_adv_netG

            # Train G
            optimizer_netG.zero_grad()
            loss_netG.backward()
            optimizer_netG.step()

            # Train D
            optimizer_netD.zero_grad()
            loss_netD.backward()
            optimizer_netD.step()

            print(
                f"Epoch [{epoch:03d}/{opt.epoch:03d}] Iterations [{total_step + 1:6d}] "
                f"Mse [{res['loss'].item():.4f}] Adv_G [{loss_adv_netG.item():.4f}] Adv_D [{loss_netD.item():.4f}]"
            )
            total_step += 1


if __name__ == "__main__":
    opt = Options()
    netG = VidODE()
    train_batches = moving_square_clips(3, opt.batch_size, n_frames=opt.sample_size)
    train(opt, netG, train_batches)
