"""Tree-ring growth LSTM magnitude-pruned before fine-tuning, corrected: masks re-applied in each forward.

Reduced from pytorch/pytorch issue #33618, "torch.nn.utils.prune.remove prevents future
model training" (https://github.com/pytorch/pytorch/issues/33618).

The author L1-pruned half of every LSTM weight with ``prune.l1_unstructured`` and made
it permanent with ``prune.remove``, called ``flatten_parameters()``, then trained as
usual. The first step went through; the second ``loss.backward()`` raised "Trying to
backward through the graph a second time, but the buffers have already been freed.
Specify retain_graph=True when calling backward the first time." The LSTM kept using
the pruned weight tensor made once at pruning time (``weight_orig * mask``, a node with
history), so every step's graph hung off the same multiplication, whose saved mask
was freed by the first backward. What the author wanted, and what ``remove`` is
documented to do, is for the pruned values to become the plain trainable weight, with
no graph attached, before training continues.

Here a hand-written LSTM cell reads yearly climate (growing-season temperature,
precipitation, drought index) and predicts each year's standardised ring width; a
``prune_`` method zeroes the smallest half of the input and recurrent weights before a
fine-tuning run, storing the masked products on the cell and using them in forward,
the way the pruned LSTM kept its once-computed weights. Adam then fine-tunes over
several epochs of stand batches.
"""
import torch
import torch.nn as nn

torch.manual_seed(33618)

HPARAMS = {
    "years": 12,
    "climate_vars": 3,
    "hidden": 24,
    "stands_per_batch": 16,
    "batches": 4,
    "epochs": 3,
    "prune_amount": 0.5,
    "lr": 3e-3,
}


def stand_batch(hp):
    """Climate series per stand and the ring-width index they produce."""
    clim = torch.randn(hp["stands_per_batch"], hp["years"], hp["climate_vars"])
    drought = clim[..., 2].cumsum(dim=1) / hp["years"]
    rings = 0.6 * clim[..., 1] - 0.4 * clim[..., 0] - 0.5 * drought
    rings = rings + 0.1 * torch.randn_like(rings)
    return clim, rings


class RingLSTMCell(nn.Module):
    def __init__(self, n_in, hidden):
        super().__init__()
        self.hidden = hidden
        self.weight_ih = nn.Parameter(torch.randn(4 * hidden, n_in) / n_in ** 0.5)
        self.weight_hh = nn.Parameter(torch.randn(4 * hidden, hidden) / hidden ** 0.5)
        self.bias = nn.Parameter(torch.zeros(4 * hidden))
        self.pruned = None

    def prune_(self, amount):
        """L1 magnitude pruning of both weight matrices, kept for the fine-tuning run."""
        pruned = {}
        for name in ("weight_ih", "weight_hh"):
            w = getattr(self, name)
            k = int(amount * w.numel())
            threshold = w.detach().abs().flatten().kthvalue(k).values
            mask = (w.detach().abs() > threshold).float()
            pruned[name] = mask
        self.pruned = pruned

    def weights(self):
        if self.pruned is not None:
            # Re-apply the masks in every forward so each step builds its own graph.
            return (self.weight_ih * self.pruned["weight_ih"],
                    self.weight_hh * self.pruned["weight_hh"])
        return self.weight_ih, self.weight_hh

    def forward(self, x_t, state):
        h, c = state
        w_ih, w_hh = self.weights()
        gates = x_t @ w_ih.T + h @ w_hh.T + self.bias
        i, f, g, o = gates.chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, c


class RingWidthModel(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.cell = RingLSTMCell(hp["climate_vars"], hp["hidden"])
        self.readout = nn.Linear(hp["hidden"], 1)

    def forward(self, clim):
        batch, years, _ = clim.shape
        h = clim.new_zeros(batch, self.cell.hidden)
        c = clim.new_zeros(batch, self.cell.hidden)
        widths = []
        for t in range(years):
            h, c = self.cell(clim[:, t], (h, c))
            widths.append(self.readout(h).squeeze(-1))
        return torch.stack(widths, dim=1)


def main():
    hp = HPARAMS
    model = RingWidthModel(hp)

    # Prune once, then fine-tune the smaller model.
    model.cell.prune_(hp["prune_amount"])
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])
    criterion = nn.MSELoss()

    for epoch in range(hp["epochs"]):
        for step in range(hp["batches"]):
            clim, rings = stand_batch(hp)
            optimizer.zero_grad()
            pred = model(clim)
            loss = criterion(pred, rings)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: mse {loss.item():.4f}")


if __name__ == "__main__":
    main()
