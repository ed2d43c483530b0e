"""Hot-air balloon flight planning: a conditional WGAN-GP that samples drift tracks.

Source: https://github.com/junyanz/pytorch-CycleGAN-and-pix2pix/issues/439 (comment
of 2020-06-23). The author adapted pix2pix to WGAN-GP: ``forward()`` stores the
generator's output on the model, ``backward_D()`` builds the fake pair from it,
feeds ``fake_AB.detach()`` to the critic but hands the undetached ``fake_AB`` to
``cal_gradient_penalty``, and ``optimize_parameters()`` updates the critic several
times before the generator. The author saw "Trying to backward through the graph a
second time" although each loss is backwarded once. Here the same model class
generates a balloon's horizontal drift track (displacement every 5 minutes) from
launch conditions (wind profile at four altitudes, surface temperature, planned
climb rate), with a critic on (conditions, track) pairs and n_critic = 3.
"""
import torch
import torch.nn as nn

torch.manual_seed(5)

OPTS = {
    "cond_dim": 10,
    "track_len": 12,
    "noise_dim": 8,
    "hidden": 64,
    "batch_size": 24,
    "n_critic": 3,
    "lambda_gp": 10.0,
    "lr": 1e-4,
    "iterations": 6,
}


def synth_flights(n, opts):
    cond = torch.randn(n, opts["cond_dim"])
    wind_u, wind_v = cond[:, 0:4].mean(1, keepdim=True), cond[:, 4:8].mean(1, keepdim=True)
    t = torch.linspace(0, 1, opts["track_len"]).unsqueeze(0)
    track = torch.cat([wind_u * t + 0.05 * torch.randn(n, opts["track_len"]),
                       wind_v * t + 0.05 * torch.randn(n, opts["track_len"])], dim=1)
    return cond, track


def mlp(sizes):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.LeakyReLU(0.2)]
    return nn.Sequential(*layers[:-1])


def cal_gradient_penalty(netD, real_data, fake_data, lambda_gp):
    alpha = torch.rand(real_data.size(0), 1).expand_as(real_data)
    interpolates = alpha * real_data + (1 - alpha) * fake_data
    interpolates.requires_grad_(True)
    disc_interpolates = netD(interpolates)
    gradients = torch.autograd.grad(
        outputs=disc_interpolates, inputs=interpolates,
        grad_outputs=torch.ones_like(disc_interpolates),
        create_graph=True, retain_graph=True, only_inputs=True,
    )[0]
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean() * lambda_gp


class DriftGANModel:
    def __init__(self, opts):
        self.opts = opts
        track_dim = 2 * opts["track_len"]
        self.netG = mlp([opts["cond_dim"] + opts["noise_dim"], opts["hidden"], opts["hidden"], track_dim])
        self.netD = mlp([opts["cond_dim"] + track_dim, opts["hidden"], opts["hidden"], 1])
        self.optimizer_G = torch.optim.Adam(self.netG.parameters(), lr=opts["lr"], betas=(0.5, 0.9))
        self.optimizer_D = torch.optim.Adam(self.netD.parameters(), lr=opts["lr"], betas=(0.5, 0.9))

    def set_input(self, cond, track):
        self.real_A = cond
        self.real_B = track

    def forward(self):
        z = torch.randn(self.real_A.size(0), self.opts["noise_dim"])
        self.fake_B = self.netG(torch.cat((self.real_A, z), 1))

    def backward_D(self):
        fake_AB = torch.cat((self.real_A, self.fake_B), 1)
        pred_fake = self.netD(fake_AB.detach())
        self.loss_D_fake = pred_fake.mean()
        real_AB = torch.cat((self.real_A, self.real_B), 1)
        pred_real = self.netD(real_AB)
        self.loss_D_real = -pred_real.mean()
        self.gradient_penalty = cal_gradient_penalty(self.netD, real_AB, fake_AB, self.opts["lambda_gp"])
        self.loss_D = self.loss_D_fake + self.loss_D_real + self.gradient_penalty
        self.loss_D.backward()

    def backward_G(self):
        fake_AB = torch.cat((self.real_A, self.fake_B), 1)
        self.loss_G = -self.netD(fake_AB).mean()
        self.loss_G.backward()

    def optimize_parameters(self):
        self.forward()
        for _ in range(self.opts["n_critic"]):
            self.optimizer_D.zero_grad()
            self.backward_D()
            self.optimizer_D.step()
        for p in self.netD.parameters():
            p.requires_grad_(False)
        self.optimizer_G.zero_grad()
        self.backward_G()
        self.optimizer_G.step()
        for p in self.netD.parameters():
            p.requires_grad_(True)


def main():
    cond, track = synth_flights(240, OPTS)
    model = DriftGANModel(OPTS)
    bs = OPTS["batch_size"]
    for it in range(OPTS["iterations"]):
        start = (it * bs) % cond.size(0)
        model.set_input(cond[start:start + bs], track[start:start + bs])
        model.optimize_parameters()
        print(f"iter {it}: D {model.loss_D.item():.3f}  GP {model.gradient_penalty.item():.3f}  G {model.loss_G.item():.3f}")


if __name__ == "__main__":
    main()
