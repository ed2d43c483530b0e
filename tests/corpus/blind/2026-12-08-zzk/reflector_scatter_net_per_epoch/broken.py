"""Least-squares migration with a CNN that maps the migration velocity model to a scattering image.

Source: https://github.com/ar4/deepwave/issues/49
("insert nn to scatter_born can not back propagation").

The author was imaging with Deepwave's Born propagator (``scalar_born``) but, instead of
inverting the scattering potential directly, put a small network in front of it:
``v_tmp = net(v_mig1)`` turns the smoothed migration velocity into a scattering model, and
the shots are then propagated batch by batch, each batch's misfit backwarded and the SGD
optimiser stepped.  The network was called once per epoch, *before* the
``for batch in range(n_batch)`` loop, so every batch's loss reached back into the same
network graph; the first batch's ``loss.backward()`` freed it and the second batch failed
with "Trying to backward through the graph a second time" (the author's code in the
thread carries ``loss.backward(retain_graph=True)``, the usual first reaction to it).
The maintainer's answer: to update the network after each batch, call the network in each
batch -- move ``scatter = net(v_mig...)`` inside the batch loop -- and drop
``retain_graph=True``; the author's updated script does exactly that.

Reduction: Deepwave's Born propagator is replaced by a linear Born operator made of fixed
per-shot Green's-function matrices (the scattered data are linear in the scattering
model, as in Born modelling); velocity, observed data and geometry are synthetic.  The
structure is the report's: the network is applied once per epoch outside the shot-batch
loop, and each batch backwards and steps the optimiser.
"""
import torch
import torch.nn as nn

HPARAMS = {
    "nz": 16,
    "nx": 16,
    "n_shots": 8,
    "n_receivers": 8,
    "nt": 24,
    "n_batch": 4,
    "n_epochs": 3,
    "lr": 1e-3,
}


class ScatterNet(nn.Module):
    """Small conv net: migration velocity (1, 1, nz, nx) -> scattering potential."""

    def __init__(self, width=8):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1),
            nn.Tanh(),
            nn.Conv2d(width, width, 3, padding=1),
            nn.Tanh(),
            nn.Conv2d(width, 1, 3, padding=1),
        )

    def forward(self, v):
        return self.body(v)


class BornOperator:
    """Linear Born modelling: scattered data of each shot = G_shot @ scatter."""

    def __init__(self, n_shots, n_receivers, nt, nz, nx):
        self.shape = (n_receivers, nt)
        self.green = torch.randn(n_shots, n_receivers * nt, nz * nx) / (nz * nx) ** 0.5

    def __call__(self, scatter, shots):
        model = scatter.reshape(-1)
        g = self.green[shots]                       # (b, nr*nt, nz*nx)
        data = g @ model                            # (b, nr*nt)
        return data.reshape(len(shots), *self.shape)


def make_survey(hp):
    nz, nx = hp["nz"], hp["nx"]
    depth = torch.linspace(1.5, 3.0, nz).unsqueeze(1).expand(nz, nx)
    v_true = depth.clone()
    v_true[nz // 2:nz // 2 + 2, 4:12] += 0.4          # a reflector
    v_mig = torch.nn.functional.avg_pool2d(v_true[None, None], 5, stride=1, padding=2)[0, 0]
    scatter_true = (v_true - v_mig)
    born = BornOperator(hp["n_shots"], hp["n_receivers"], hp["nt"], nz, nx)
    shots = torch.arange(hp["n_shots"])
    observed = born(scatter_true, shots) + 0.01 * torch.randn(hp["n_shots"], hp["n_receivers"], hp["nt"])
    return v_mig, born, observed


def main():
    torch.manual_seed(0)
    hp = HPARAMS
    v_mig, born, observed = make_survey(hp)
    v_mig = v_mig - v_mig.mean()

    net = ScatterNet()
    optimiser = torch.optim.SGD(net.parameters(), lr=hp["lr"], momentum=0.9)
    loss_fn = nn.MSELoss()

    n_shots, n_batch = hp["n_shots"], hp["n_batch"]
    n_shots_per_batch = (n_shots + n_batch - 1) // n_batch

    for epoch in range(hp["n_epochs"]):
        net.train()
        epoch_loss = 0.0
        optimiser.zero_grad()
        scatter = net(v_mig.unsqueeze(0).unsqueeze(0)).squeeze(0).squeeze(0)
        for batch in range(n_batch):
            batch_start = batch * n_shots_per_batch
            batch_end = min(batch_start + n_shots_per_batch, n_shots)
            if batch_end <= batch_start:
                continue
            s = torch.arange(batch_start, batch_end)
            out = born(scatter, s)
            loss = 1e2 * loss_fn(out, observed[s])
            epoch_loss += loss.item()
            loss.backward()
            optimiser.step()
            optimiser.zero_grad()
        print(f"epoch {epoch}: misfit {epoch_loss:.5f}")


if __name__ == "__main__":
    main()
