"""HyperStyle-style hypernetwork: iteratively predicts offsets for a frozen generator's weights.

Source: https://github.com/yuval-alaluf/restyle-encoder/issues/15. The author trained ReStyle's
iterative encoder, where each refinement step takes the input image together with the previous
step's reconstruction, runs the generator, and calls ``loss.backward()`` once per step before a single
optimizer step per batch; training stopped at the second step with "Trying to backward through the
graph a second time". The maintainer's answer: this happens when a variable is passed through the
network more than once, i.e. the previous step's outputs must enter the next step cut from their
graph, as the training coach does with ``y_hat.clone().detach().requires_grad_(True)``. The training
setting is the writer's: the same iterative coach with a hypernetwork (HyperStyle's successor to
ReStyle) that emits per-layer weight offsets for a frozen decoder, the offsets of the previous step
being fed back and accumulated.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

IMG, LATENT, HIDDEN, BATCH, N_ITERS = 64, 8, 48, 16, 3


class FrozenDecoder(nn.Module):
    """The pretrained generator: its weights are only ever modulated, never trained."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(LATENT, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, IMG)

    def forward(self, w, deltas=None):
        layers = [self.fc1, self.fc2, self.out]
        h = w
        for i, layer in enumerate(layers):
            weight = layer.weight if deltas is None else layer.weight * (1 + deltas[i])
            h = F.linear(h, weight, layer.bias)
            if i < len(layers) - 1:
                h = F.leaky_relu(h, 0.2)
        return torch.tanh(h)


class HyperNet(nn.Module):
    """Takes the target and the current reconstruction, emits a relative offset per decoder weight."""

    def __init__(self, shapes):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(2 * IMG, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU())
        self.heads = nn.ModuleList([nn.Linear(64, s[0] * s[1]) for s in shapes])
        self.shapes = shapes
        for head in self.heads:
            nn.init.zeros_(head.bias)
            nn.init.normal_(head.weight, std=1e-3)

    def forward(self, x, y_hat):
        feat = self.trunk(torch.cat([x, y_hat], dim=1)).mean(0)
        return [head(feat).view(*shape) for head, shape in zip(self.heads, self.shapes)]


decoder = FrozenDecoder()
decoder.requires_grad_(False)
shapes = [tuple(m.weight.shape) for m in (decoder.fc1, decoder.fc2, decoder.out)]
hypernet = HyperNet(shapes)
optimizer = torch.optim.Adam(hypernet.parameters(), lr=1e-3)

w_avg = torch.randn(LATENT) * 0.1
true_w = torch.randn(256, LATENT)
with torch.no_grad():
    data = decoder(true_w) + 0.05 * torch.randn(256, IMG)


def perform_train_iteration_on_batch(x):
    w = w_avg.expand(x.size(0), -1)
    with torch.no_grad():
        y_hat = decoder(w)  # the average image starts the refinement
    weights_deltas = None
    losses = []
    for it in range(N_ITERS):
        new_deltas = hypernet(x, y_hat)
        if weights_deltas is None:
            weights_deltas = new_deltas
        else:
            weights_deltas = [prev + new for prev, new in zip(weights_deltas, new_deltas)]
        y_hat = decoder(w, weights_deltas)
        loss = F.mse_loss(y_hat, x) + 0.01 * sum(d.pow(2).mean() for d in new_deltas)
        loss.backward()
        losses.append(loss.item())
    return losses


for step in range(25):
    x = data[torch.randint(0, data.size(0), (BATCH,))]
    optimizer.zero_grad()
    losses = perform_train_iteration_on_batch(x)
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step} " + " ".join(f"{v:.4f}" for v in losses))
