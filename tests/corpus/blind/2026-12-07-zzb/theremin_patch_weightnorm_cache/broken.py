"""Synthesizer patch matching: regress a subtractive-synth patch from a target sound's
spectral descriptors, with a hand-written weight-normalised layer that caches its weight.

Source: https://github.com/pytorch/pytorch/issues/2176 ("should weight norm only recompute
weights at the beginning and after each call to backward?"). The author's own weight-norm
implementation recomputed ``w = g * v / ||v||`` on every forward and ran out of memory on
an RNN, so he changed it to recompute the weight only at the beginning and after each
call to ``backward`` (his gist), keeping the computed weight on the module in between.

Reduction (the writer's): a patch regressor (oscillator mix, filter cutoff, resonance,
envelope times) for a theremin-like synth voice. The layer keeps its normalised weight
on the module and recomputes it only when marked stale; the trainer marks it stale from
an epoch-start callback, so the cached weight (and the graph that made it) is reused by
the next step after a backward has already freed it. Synthetic data, small sizes.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

CONFIG = {
    "n_sounds": 80,
    "n_descriptors": 20,
    "n_patch_params": 7,
    "width": 48,
    "batch_size": 16,
    "lr": 3e-3,
    "epochs": 2,
}


class CachedWeightNormLinear(nn.Module):
    """y = x W^T + b with W = g * v / ||v|| (rows), W kept until marked stale."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.v = nn.Parameter(torch.randn(out_features, in_features) * 0.1)
        self.g = nn.Parameter(torch.ones(out_features, 1))
        self.bias = nn.Parameter(torch.zeros(out_features))
        self._weight = None

    def mark_stale(self):
        self._weight = None

    def weight(self):
        if self._weight is None:
            self._weight = self.g * self.v / self.v.norm(dim=1, keepdim=True)
        return self._weight

    def forward(self, x):
        return F.linear(x, self.weight(), self.bias)


class PatchRegressor(nn.Module):
    def __init__(self, n_in, width, n_out):
        super().__init__()
        self.inp = CachedWeightNormLinear(n_in, width)
        self.mid = CachedWeightNormLinear(width, width)
        self.out = nn.Linear(width, n_out)

    def wn_layers(self):
        return [m for m in self.modules() if isinstance(m, CachedWeightNormLinear)]

    def forward(self, desc):
        h = F.gelu(self.inp(desc))
        h = F.gelu(self.mid(h))
        return torch.sigmoid(self.out(h))


def synth_dataset(cfg):
    patches = torch.rand(cfg["n_sounds"], cfg["n_patch_params"])
    mixing = torch.randn(cfg["n_patch_params"], cfg["n_descriptors"])
    descriptors = torch.tanh(patches @ mixing) + 0.05 * torch.randn(cfg["n_sounds"], cfg["n_descriptors"])
    return descriptors, patches


class Trainer:
    def __init__(self, net, opt, callbacks):
        self.net = net
        self.opt = opt
        self.callbacks = callbacks

    def _fire(self, event):
        for cb in self.callbacks:
            fn = getattr(cb, event, None)
            if fn is not None:
                fn(self)

    def fit(self, descriptors, patches, epochs, batch_size):
        for epoch in range(epochs):
            self._fire("on_epoch_start")
            perm = torch.randperm(descriptors.shape[0])
            for start in range(0, descriptors.shape[0], batch_size):
                idx = perm[start:start + batch_size]
                pred = self.net(descriptors[idx])
                patch_loss = F.mse_loss(pred, patches[idx])
                self.opt.zero_grad()
                patch_loss.backward()
                self.opt.step()
                self._fire("on_step_end")
            print(f"epoch {epoch}: last patch mse {patch_loss.item():.4f}")


class RefreshWeightNorm:
    def on_epoch_start(self, trainer):
        for layer in trainer.net.wn_layers():
            layer.mark_stale()


def main():
    descriptors, patches = synth_dataset(CONFIG)
    net = PatchRegressor(CONFIG["n_descriptors"], CONFIG["width"], CONFIG["n_patch_params"])
    opt = torch.optim.Adam(net.parameters(), lr=CONFIG["lr"])
    trainer = Trainer(net, opt, callbacks=[RefreshWeightNorm()])
    trainer.fit(descriptors, patches, CONFIG["epochs"], CONFIG["batch_size"])


if __name__ == "__main__":
    main()
