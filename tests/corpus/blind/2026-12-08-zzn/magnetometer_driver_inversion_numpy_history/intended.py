"""Space-weather driver inversion: fit a solar-wind profile so a frozen Dst emulator matches magnetometers (intended).

Corrected as the error message and the thread say: the progress block keeps a
detached copy of the profile (`.detach().clone().numpy()`, cloned because LBFGS
updates the parameter in place and a bare detached view would alias it).  Seeds,
data and the order of random draws are those of broken.py.

The original docstring follows.


Source: https://github.com/pytorch/pytorch/issues/44023
"RuntimeError: Can't call numpy() on Tensor that requires grad. Use
tensor.detach().numpy() instead." (pytorch/pytorch issue #44023).

The thread collects reports of this error.  The comment I reduce (solarshao1006,
2022-04-22) runs the classic neural style-transfer loop: an input image `opt_img`
that requires grad is optimised with `optim.LBFGS([opt_img])` through a frozen VGG,
inside `while n_iter[0] <= max_iter:` with a `closure()` that zero-grads, computes
the weighted layer losses, calls `loss.backward()`, bumps `n_iter[0]` and every
`show_iter` iterations reports progress, and hits the error.  The copy I opened cuts
the comment off at the progress report, so where exactly the conversion happens is
not shown; the error itself says what the answer is: a tensor that requires grad
(here the optimised input) is turned into a NumPy array without `.detach()`.
The evident intent is to log a copy of the values, `tensor.detach().numpy()`.

Reduction: the same loop shape (LBFGS over one optimised tensor held by a small
`nn.Module`, a frozen pretrained network, a closure with `n_iter = [0]` and a
`show_iter` progress block) in a space-weather setting of mine: a 24-hour
solar-wind driver profile (Bz, speed, density) is fitted so that a frozen GRU Dst
emulator reproduces the disturbance measured by ground magnetometers, with a
smoothness penalty on the profile.  The progress block keeps snapshots of the
profile for plotting with `.numpy()` on the parameter, which fails at the first
report, after two LBFGS steps.
"""
import torch
import torch.nn as nn

HPARAMS = {
    "hours": 24,
    "drivers": 3,
    "hidden": 16,
    "max_iter": 20,
    "show_iter": 6,
    "lbfgs_inner": 3,
    "smooth_weight": 0.05,
}


class DstEmulator(nn.Module):
    """Pretrained (here: seeded, frozen) GRU mapping drivers to an hourly Dst curve."""

    def __init__(self, drivers, hidden):
        super().__init__()
        self.gru = nn.GRU(drivers, hidden, batch_first=True)
        self.readout = nn.Linear(hidden, 1)

    def forward(self, profile):
        out, _ = self.gru(profile.unsqueeze(0))
        return 40.0 * self.readout(out).squeeze(0).squeeze(-1)


class DriverProfile(nn.Module):
    """The solar-wind profile being inverted, one row per hour."""

    def __init__(self, init):
        super().__init__()
        self.profile = nn.Parameter(init.clone())

    def forward(self):
        return self.profile


def smoothness(profile):
    return (profile[1:] - profile[:-1]).pow(2).mean()


def main():
    torch.manual_seed(7)
    hp = HPARAMS
    emulator = DstEmulator(hp["drivers"], hp["hidden"])
    for p in emulator.parameters():
        p.requires_grad_(False)
    emulator.eval()

    true_profile = torch.randn(hp["hours"], hp["drivers"]).cumsum(0) * 0.3
    with torch.no_grad():
        observed_dst = emulator(true_profile) + 2.0 * torch.randn(hp["hours"])

    quiet = torch.zeros(hp["hours"], hp["drivers"])
    driver = DriverProfile(quiet)
    optimizer = torch.optim.LBFGS(driver.parameters(), max_iter=hp["lbfgs_inner"])
    criterion = nn.MSELoss()

    show_iter = hp["show_iter"]
    snapshots = []
    n_iter = [0]
    while n_iter[0] <= hp["max_iter"]:

        def closure():
            optimizer.zero_grad()
            predicted = emulator(driver())
            loss = criterion(predicted, observed_dst) + hp["smooth_weight"] * smoothness(driver.profile)
            loss.backward()
            n_iter[0] += 1
            if n_iter[0] % show_iter == (show_iter - 1):
                print("Iteration: %d, loss: %f" % (n_iter[0] + 1, loss.item()))
                snapshots.append(driver.profile.detach().clone().numpy())
            return loss

        optimizer.step(closure)

    print(f"kept {len(snapshots)} profile snapshots")


if __name__ == "__main__":
    main()
