"""A DCGAN-style 1-D GAN that synthesises plasma concentration-time profiles of virtual patients.

Source: https://github.com/pytorch/examples/issues/584
"in DCGAN example, Why do we need to make netD inference twice?"

The author was reading the DCGAN example's training loop: in step (1) the discriminator is
run on `fake.detach()` and `errD_fake.backward()` is called; in step (2) the example runs
`output = netD(fake)` again to compute `errG`. The author proposed to skip the second
inference and re-use the `output` of the first one to compute `errG`. Doing so fails with
"Trying to backward through the graph a second time": that `output` belongs to a graph that
`errD_fake.backward()` has already freed, and since it was computed from `fake.detach()` it
could never reach netG anyway (netD has also been updated by `optimizerD.step()` since). The
intent, and what the example itself does, is to run the discriminator a second time, on the
non-detached `fake`, so that `errG` flows back into the generator.

Reduction: the example's loop (BCELoss, real_label/fake_label, `label.fill_`, netD.zero_grad /
netG.zero_grad, optimizerD / optimizerG with Adam(beta1=0.5)) on 1-D transposed-conv and conv
networks, with real data drawn from a one-compartment oral-absorption PK model with random
absorption/elimination rates and volumes (log-concentration scaled to [-1, 1]). The user's
variant re-uses the discriminator's fake-batch output for `errG`.
"""
import torch
import torch.nn as nn

HPARAMS = {
    "n_patients": 128,
    "n_times": 32,
    "batch_size": 32,
    "nz": 16,
    "ngf": 32,
    "ndf": 32,
    "lr": 2e-4,
    "beta1": 0.5,
    "epochs": 2,
}

real_label = 1.0
fake_label = 0.0


class Generator(nn.Module):
    def __init__(self, nz, ngf):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose1d(nz, ngf * 2, 8, 1, 0, bias=False),
            nn.BatchNorm1d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose1d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm1d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose1d(ngf, 1, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv1d(1, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv1d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm1d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv1d(ndf * 2, 1, 8, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


def simulate_profiles(hp):
    """C(t) = F*D*ka / (V*(ka-ke)) * (exp(-ke t) - exp(-ka t)), log-scaled to [-1, 1]."""
    n, nt = hp["n_patients"], hp["n_times"]
    t = torch.linspace(0.25, 24.0, nt)
    ka = torch.exp(torch.randn(n, 1) * 0.3) * 1.2
    ke = torch.exp(torch.randn(n, 1) * 0.3) * 0.15
    vol = torch.exp(torch.randn(n, 1) * 0.2) * 40.0
    dose = 500.0
    conc = dose * ka / (vol * (ka - ke)) * (torch.exp(-ke * t) - torch.exp(-ka * t))
    logc = torch.log(conc.clamp_min(1e-3))
    lo, hi = logc.min(), logc.max()
    return (2 * (logc - lo) / (hi - lo) - 1).unsqueeze(1)


def main():
    torch.manual_seed(7)
    hp = HPARAMS
    profiles = simulate_profiles(hp)

    netG = Generator(hp["nz"], hp["ngf"])
    netG.apply(weights_init)
    netD = Discriminator(hp["ndf"])
    netD.apply(weights_init)

    criterion = nn.BCELoss()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=hp["lr"], betas=(hp["beta1"], 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=hp["lr"], betas=(hp["beta1"], 0.999))

    bs = hp["batch_size"]
    for epoch in range(hp["epochs"]):
        perm = torch.randperm(hp["n_patients"])
        for i in range(0, hp["n_patients"], bs):
            real = profiles[perm[i:i + bs]]
            batch_size = real.size(0)

            ############################
            # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
            ###########################
            netD.zero_grad()
            label = torch.full((batch_size,), real_label)
            output = netD(real)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()

            noise = torch.randn(batch_size, hp["nz"], 1)
            fake = netG(noise)
            label.fill_(fake_label)
            output = netD(fake.detach())
            errD_fake = criterion(output, label)
            errD_fake.backward()
            D_G_z1 = output.mean().item()
            errD = errD_real + errD_fake
            optimizerD.step()

            ############################
            # (2) Update G network: maximize log(D(G(z)))
            # re-use the discriminator's output on the fake batch instead of a second inference
            ###########################
            netG.zero_grad()
            label.fill_(real_label)
            errG = criterion(output, label)
            errG.backward()
            D_G_z2 = output.mean().item()
            optimizerG.step()

            print(f"[{epoch}][{i // bs}] Loss_D {errD.item():.4f} Loss_G {errG.item():.4f} "
                  f"D(x) {D_x:.3f} D(G(z)) {D_G_z1:.3f}/{D_G_z2:.3f}")


if __name__ == "__main__":
    main()
