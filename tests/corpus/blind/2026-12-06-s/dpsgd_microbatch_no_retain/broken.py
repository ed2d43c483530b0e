"""DP-SGD by microbatches: per-microbatch backward calls on the losses of one batched forward.

Report: https://github.com/MrinankSharma/DP-PVI/pull/1
The pull request adds a DP-SGD optimiser wrapper: the per-example losses of one batched forward are
split into microbatches; for each microbatch the wrapper zeroes the gradients, backpropagates the
microbatch's mean loss, reads the gradients off the parameters to clip them, and accumulates the
clipped gradients; after the last microbatch it adds Gaussian noise, writes the sum back to
``.grad`` and steps. The reviewer asks why the loop is built this way and the author explains each
step; the loop needs ``microbatch_loss.backward(retain_graph=True)`` because every microbatch's
loss shares the one forward graph. This script is that loop written without ``retain_graph``: the
second microbatch's backward goes through the batch forward that the first one freed.
(The classifier and the synthetic data are the writer's.)
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_FEATURES, N_CLASSES = 20, 4
BATCH, MICROBATCH = 64, 8
CLIP_NORM, NOISE_MULTIPLIER, LR = 1.0, 1.1, 0.1


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(N_FEATURES, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, N_CLASSES))

    def forward(self, x):
        return self.net(x)


def make_data(n=1024):
    w = torch.randn(N_FEATURES, N_CLASSES)
    x = torch.randn(n, N_FEATURES)
    y = (x @ w + 0.5 * torch.randn(n, N_CLASSES)).argmax(-1)
    return x, y


class DPSGD:
    """Clips each microbatch's gradient to CLIP_NORM, sums, adds noise, averages, steps."""

    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.params = [p for p in model.parameters() if p.requires_grad]

    def grad_norm(self):
        return torch.sqrt(sum((p.grad.detach() ** 2).sum() for p in self.params))

    def step(self, losses):
        summed = [torch.zeros_like(p) for p in self.params]
        microbatches = losses.split(MICROBATCH, dim=0)
        for mb_losses in microbatches:
            self.optimizer.zero_grad()
            microbatch_loss = mb_losses.mean(dim=0)
            microbatch_loss.backward()
            self.accumulate_clipped(summed)
        self.write_noisy_mean(summed, len(microbatches))
        self.optimizer.step()

    def accumulate_clipped(self, summed):
        factor = (CLIP_NORM / (self.grad_norm() + 1e-6)).clamp(max=1.0)
        for acc, p in zip(summed, self.params):
            acc.add_(p.grad.detach() * factor)

    def write_noisy_mean(self, summed, n_microbatches):
        for acc, p in zip(summed, self.params):
            noise = torch.randn_like(acc) * NOISE_MULTIPLIER * CLIP_NORM
            p.grad = (acc + noise) / n_microbatches


def main():
    x_all, y_all = make_data()
    model = Classifier()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    dp = DPSGD(model, optimizer)
    for step in range(6):
        idx = torch.randint(0, len(x_all), (BATCH,))
        x, y = x_all[idx], y_all[idx]
        logits = model(x)
        losses = F.cross_entropy(logits, y, reduction="none")
        dp.step(losses)
        if step % 5 == 0:
            print(step, losses.mean().item())


if __name__ == "__main__":
    main()
