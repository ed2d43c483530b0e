"""Hierarchically-nested GAN generating facade elevations at two resolutions from an embedding
of an architectural design brief; the per-scale loss curves are plotted by handing the loss
tensors to numpy.

Source: https://github.com/ypxie/HDGan/issues/15
"RuntimeError: Can't call numpy() on Variable that requires grad. Use var.detach().numpy()
instead." (ypxie/HDGan issue #15).

The report's author ran HDGan's bird training script unchanged and got that error from
``train_gans`` in ``HDGan.py``, at the line that feeds a per-scale discriminator loss to its
plot, ``d_plot_dict[key].plot(...)``: the loss tensor handed to numpy for the loss curve is
still part of the autograd graph.  (The copy of ``HDGan.py`` I read takes ``.cpu().data.numpy()``
there; the version the author ran evidently handed numpy the graph-attached tensor itself, which
is what the reduction does.)  HDGan logs each scale's image loss and the total losses of
both networks through numpy for its visdom plots; what the author wants there is the number,
so the logged value must be detached (``loss.detach().cpu().numpy()``, or ``.item()``), as the
error message itself says.  The training itself is unaffected.

Reduction: the HDGan training loop on a small scale: a generator with conditioning
augmentation (KL loss) that emits images at two resolutions in a dict, a discriminator with a
pair (image, embedding) head and a local image head per resolution, least-squares losses as in
``compute_d_pair_loss`` / ``compute_d_img_loss`` / ``compute_g_loss``, two Adams, and plot
objects that record each logged value; synthetic facade images (a grid of window openings on
a wall) paired with brief embeddings drawn from torch.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(15)

HPARAMS = {
    "emb_dim": 24,
    "z_dim": 16,
    "ngf": 16,
    "ndf": 16,
    "scales": [8, 16],
    "batch_size": 8,
    "n_batches": 3,
    "epochs": 2,
    "lr": 2e-4,
    "KL_COE": 4.0,
    "img_loss_ratio": 1.0,
}


class Plot:
    """Records one curve, as HDGan's visdom plot helpers do."""

    def __init__(self, name):
        self.name = name
        self.values = []

    def plot(self, value):
        self.values.append(float(value))


class CondAugment(nn.Module):
    def __init__(self, emb_dim, c_dim):
        super().__init__()
        self.fc = nn.Linear(emb_dim, c_dim * 2)

    def forward(self, emb):
        mu, logvar = self.fc(emb).chunk(2, dim=1)
        c = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        kl = -0.5 * torch.mean(1 + logvar - mu.pow(2) - logvar.exp())
        return c, kl


class Generator(nn.Module):
    def __init__(self, hp):
        super().__init__()
        ngf = hp["ngf"]
        self.ca = CondAugment(hp["emb_dim"], hp["z_dim"])
        self.fc = nn.Linear(hp["z_dim"] * 2, ngf * 4 * 4)
        self.up8 = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(ngf, ngf, 3, padding=1), nn.BatchNorm2d(ngf), nn.ReLU())
        self.up16 = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(ngf, ngf // 2, 3, padding=1), nn.BatchNorm2d(ngf // 2), nn.ReLU())
        self.to_img8 = nn.Conv2d(ngf, 1, 3, padding=1)
        self.to_img16 = nn.Conv2d(ngf // 2, 1, 3, padding=1)
        self.ngf = ngf

    def forward(self, emb, z):
        c, kl = self.ca(emb)
        h = self.fc(torch.cat([c, z], 1)).view(-1, self.ngf, 4, 4)
        h8 = self.up8(h)
        h16 = self.up16(h8)
        return {8: torch.tanh(self.to_img8(h8)), 16: torch.tanh(self.to_img16(h16))}, kl


class ScaleDiscriminator(nn.Module):
    def __init__(self, size, emb_dim, ndf):
        super().__init__()
        layers = [nn.Conv2d(1, ndf, 3, 1, 1), nn.LeakyReLU(0.2)]
        s, ch = size, ndf
        while s > 4:
            layers += [nn.Conv2d(ch, ch * 2, 4, 2, 1), nn.LeakyReLU(0.2)]
            s, ch = s // 2, ch * 2
        self.encode = nn.Sequential(*layers)
        self.local_img = nn.Conv2d(ch, 1, 1)
        self.pair = nn.Sequential(nn.Conv2d(ch + emb_dim, ch, 1), nn.LeakyReLU(0.2), nn.Conv2d(ch, 1, 4))

    def forward(self, img, emb):
        h = self.encode(img)
        e = emb[:, :, None, None].expand(-1, -1, h.shape[2], h.shape[3])
        return {"pair_disc": self.pair(torch.cat([h, e], 1)).view(-1), "local_img_disc": self.local_img(h)}


class Discriminator(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.heads = nn.ModuleDict({str(s): ScaleDiscriminator(s, hp["emb_dim"], hp["ndf"]) for s in hp["scales"]})

    def forward(self, img, emb):
        return self.heads[str(img.shape[-1])](img, emb)


def compute_d_pair_loss(real_logit, wrong_logit, fake_logit):
    real_d_loss = torch.mean((real_logit - 1) ** 2)
    wrong_d_loss = torch.mean(wrong_logit ** 2)
    fake_d_loss = torch.mean(fake_logit ** 2)
    return real_d_loss + (wrong_d_loss + fake_d_loss) / 2.0


def compute_d_img_loss(wrong_img_logit, real_img_logit, fake_logit, prob=0.5):
    wrong_d_loss = torch.mean((wrong_img_logit - 1) ** 2)
    real_d_loss = torch.mean((real_img_logit - 1) ** 2)
    real_img_d_loss = wrong_d_loss * prob + real_d_loss * (1 - prob)
    fake_d_loss = torch.mean(fake_logit ** 2)
    return fake_d_loss + real_img_d_loss


def compute_g_loss(fake_logit):
    return torch.mean((fake_logit - 1) ** 2)


def make_facades(hp):
    """Wall with a grid of window openings; the brief embedding encodes the grid and style."""
    n = hp["batch_size"] * hp["n_batches"]
    floors = torch.randint(2, 5, (n,))
    bays = torch.randint(2, 5, (n,))
    style = torch.randn(n, hp["emb_dim"] - 2)
    emb = torch.cat([floors[:, None].float() / 4, bays[:, None].float() / 4, style], 1)
    images = {}
    for s in hp["scales"]:
        yy, xx = torch.meshgrid(torch.arange(s).float() / s, torch.arange(s).float() / s, indexing="ij")
        win = (torch.sin(torch.pi * yy[None] * floors[:, None, None].float()) > 0.4) & \
              (torch.sin(torch.pi * xx[None] * bays[:, None, None].float()) > 0.4)
        img = torch.where(win, -0.8, 0.6) + 0.05 * torch.randn(n, s, s)
        images[s] = img.unsqueeze(1)
    batches = []
    for b in range(hp["n_batches"]):
        sl = slice(b * hp["batch_size"], (b + 1) * hp["batch_size"])
        wrong = torch.roll(torch.arange(n)[sl], 1)
        batches.append(({s: images[s][sl] for s in hp["scales"]},
                        {s: images[s][wrong] for s in hp["scales"]},
                        emb[sl]))
    return batches


def toggle_grad(model, flag):
    for p in model.parameters():
        p.requires_grad = flag


def train_gans(data, netG, netD, hp):
    optimizerD = torch.optim.Adam(netD.parameters(), lr=hp["lr"], betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=hp["lr"], betas=(0.5, 0.999))
    d_plot_dict = {k: Plot(f"d_img_loss_{k}") for k in hp["scales"]}
    g_plot_dict = {k: Plot(f"g_img_loss_{k}") for k in hp["scales"]}
    d_loss_plot, g_loss_plot = Plot("d_loss"), Plot("g_loss")
    img_loss_ratio = hp["img_loss_ratio"]

    for epoch in range(hp["epochs"]):
        for it, (images, wrong_images, embeddings) in enumerate(data):
            z = torch.randn(embeddings.shape[0], hp["z_dim"])

            ''' update D '''
            toggle_grad(netD, True)
            netD.zero_grad()
            fake_images, _ = netG(embeddings, z)
            discriminator_loss = 0
            for key in hp["scales"]:
                this_fake = fake_images[key].detach()
                real_dict = netD(images[key], embeddings)
                wrong_dict = netD(wrong_images[key], embeddings)
                fake_dict = netD(this_fake, embeddings)
                discriminator_loss = discriminator_loss + compute_d_pair_loss(
                    real_dict["pair_disc"], wrong_dict["pair_disc"], fake_dict["pair_disc"])
                img_loss = compute_d_img_loss(
                    wrong_dict["local_img_disc"], real_dict["local_img_disc"], fake_dict["local_img_disc"], prob=0.5)
                discriminator_loss = discriminator_loss + img_loss_ratio * img_loss
                d_plot_dict[key].plot(img_loss.detach().cpu().numpy().mean())

            d_loss_val = discriminator_loss.detach().cpu().numpy().mean()
            discriminator_loss.backward()
            optimizerD.step()
            netD.zero_grad()
            d_loss_plot.plot(d_loss_val)

            ''' update G '''
            toggle_grad(netD, False)  # to avoid computation
            netG.zero_grad()
            fake_images, kl_loss = netG(embeddings, torch.randn_like(z))
            generator_loss = hp["KL_COE"] * kl_loss
            for key in hp["scales"]:
                fake_dict = netD(fake_images[key], embeddings)
                generator_loss = generator_loss + compute_g_loss(fake_dict["pair_disc"])
                img_loss_ = compute_g_loss(fake_dict["local_img_disc"])
                generator_loss = generator_loss + img_loss_ * img_loss_ratio
                g_plot_dict[key].plot(img_loss_.detach().cpu().numpy().mean())

            generator_loss.backward()
            g_loss_val = generator_loss.detach().cpu().numpy().mean()
            optimizerG.step()
            netG.zero_grad()
            g_loss_plot.plot(g_loss_val)
            print(f"[epoch {epoch} iter {it}] g_loss = {g_loss_val:.5f} d_loss = {d_loss_val:.5f}")
    return np.array(d_loss_plot.values), np.array(g_loss_plot.values)


def main():
    hp = HPARAMS
    data = make_facades(hp)
    netG = Generator(hp)
    netD = Discriminator(hp)
    train_gans(data, netG, netD, hp)


if __name__ == "__main__":
    main()
