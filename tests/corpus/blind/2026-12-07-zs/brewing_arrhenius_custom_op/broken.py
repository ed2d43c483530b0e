"""Beer fermentation control: fitting yeast kinetics to gravity readings from fermenters.

Source: https://github.com/linkedin/Liger-Kernel/issues/254 ("Are you even allowed to do these
ops inplace?"). The reporter's example is a custom ``torch.autograd.Function`` ``Exponential``
that saves its *output* for backward (``ctx.save_for_backward(out)``), followed by an op that
writes that output in place; the backward then reads a saved tensor that is no longer the value
the forward produced. In eager PyTorch the saved tensor's version counter catches the write:
"one of the variables needed for gradient computation has been modified by an inplace operation".

Reduction: an Arrhenius rate written as a custom Function that saves its output (the exponential)
for its backward, and the kinetics model caps the rate in place (``clamp_``) at the strain's
maximum sugar-uptake rate before integrating the gravity curve. The training setting is the
writer's.
"""

import torch
import torch.nn as nn

STRAINS = ["ale_us05", "lager_w34", "kolsch", "saison"]
HOURS = 24
DT = 1.0
R_GAS = 8.314e-3   # kJ / (mol K)
OPTIONS = {"batch": 16, "iters": 3, "lr": 5e-2, "max_rate": 0.25}


class ArrheniusRate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, log_a, ea, inv_rt):
        rate = torch.exp(log_a - ea * inv_rt)
        ctx.save_for_backward(rate, inv_rt)
        return rate

    @staticmethod
    def backward(ctx, grad_rate):
        rate, inv_rt = ctx.saved_tensors
        g = grad_rate * rate
        return g, -g * inv_rt, None


arrhenius = ArrheniusRate.apply


class FermentationKinetics(nn.Module):
    def __init__(self, n_strains, max_rate):
        super().__init__()
        self.log_a = nn.Parameter(torch.full((n_strains,), 20.0))
        self.ea = nn.Parameter(torch.tensor(55.0))
        self.lag_net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
        self.max_rate = max_rate

    def uptake_rate(self, strain, temp_c):
        inv_rt = 1.0 / (R_GAS * (temp_c + 273.15))
        rate = arrhenius(self.log_a[strain], self.ea.expand(strain.shape), inv_rt)
        rate.clamp_(max=self.max_rate)
        return rate

    def forward(self, strain, wort, temps):
        sugar = wort[:, 0].clone()
        lag = torch.sigmoid(self.lag_net(wort)).squeeze(-1)
        gravity = []
        for h in range(HOURS):
            active = torch.clamp(torch.tensor(h * DT) * lag / 6.0, max=1.0)
            rate = self.uptake_rate(strain, temps[:, h])
            sugar = sugar - DT * active * rate * sugar
            gravity.append(1.0 + 0.004 * sugar)
        return torch.stack(gravity, dim=1)


def fermenter_logs(gen, n):
    strain = torch.randint(0, len(STRAINS), (n,), generator=gen)
    wort = torch.stack([12 + 3 * torch.rand(n, generator=gen),       # plato
                        torch.rand(n, generator=gen),                # pitch rate
                        torch.rand(n, generator=gen)], dim=1)        # oxygenation
    setpoint = torch.where(strain == 1, torch.tensor(11.0), torch.tensor(19.0))
    temps = setpoint[:, None] + 0.5 * torch.randn(n, HOURS, generator=gen)
    k = torch.tensor([0.08, 0.05, 0.07, 0.10])[strain]
    t = torch.arange(HOURS) * DT
    sugar = wort[:, :1] * torch.exp(-k[:, None] * torch.clamp(t[None, :] - 3.0, min=0))
    sg = 1.0 + 0.004 * sugar + 0.0005 * torch.randn(n, HOURS, generator=gen)
    return strain, wort, temps, sg


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(5)
    strain, wort, temps, sg = fermenter_logs(gen, 48)
    kinetics = FermentationKinetics(len(STRAINS), OPTIONS["max_rate"])
    optimizer = torch.optim.Adam(kinetics.parameters(), lr=OPTIONS["lr"])
    b = OPTIONS["batch"]
    for it in range(OPTIONS["iters"]):
        for start in range(0, len(strain), b):
            sl = slice(start, start + b)
            pred = kinetics(strain[sl], wort[sl], temps[sl])
            gravity_loss = ((pred - sg[sl]) * 1e3).pow(2).mean()
            optimizer.zero_grad()
            gravity_loss.backward()
            optimizer.step()
        print(f"iter {it}: gravity loss {gravity_loss.item():.4f} (SG points^2)")


if __name__ == "__main__":
    main()
