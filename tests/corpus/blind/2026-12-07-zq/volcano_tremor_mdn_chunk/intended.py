"""Probabilistic forecast of volcanic tremor amplitude with a GRU and a mixture-density head.

Source: https://discuss.pytorch.org/t/when-backward-can-be-safely-omitted/1284

The author implemented the mixture-density loss of Graves' handwriting model (eq. 18-26
of arXiv:1308.0850) on the RNN's output: the output is sliced into the mixture weights,
means, standard deviations and correlation, each slice is transformed (sigmoid, exp,
softmax, tanh), and asked whether autograd handles this without a hand-written backward.
The reduction keeps that shape for a one-dimensional target: a GRU over hourly seismic
tremor features, a linear layer giving 3K mixture parameters that are split with
chunk into logits, means and log standard deviations, and a numerical floor applied
to the log standard deviations in place before the negative log-likelihood.
"""

import math

import torch
import torch.nn as nn

CFG = {
    "features": 6,
    "hidden": 32,
    "components": 4,
    "window": 24,
    "batch": 16,
    "epochs": 3,
    "batches_per_epoch": 3,
    "lr": 2e-3,
}


class TremorMDN(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.rnn = nn.GRU(cfg["features"], cfg["hidden"], batch_first=True)
        self.mdn = nn.Linear(cfg["hidden"], 3 * cfg["components"])

    def forward(self, x):
        out, _ = self.rnn(x)
        params = self.mdn(out[:, -1])
        logit_pi, mu, log_sigma = params.chunk(3, dim=-1)
        log_sigma = log_sigma.clamp(min=-5.0, max=3.0)
        return logit_pi, mu, log_sigma


def mixture_nll(logit_pi, mu, log_sigma, y):
    log_pi = torch.log_softmax(logit_pi, dim=-1)
    z = (y.unsqueeze(-1) - mu) / log_sigma.exp()
    log_prob = -0.5 * z.pow(2) - log_sigma - 0.5 * math.log(2 * math.pi)
    return -torch.logsumexp(log_pi + log_prob, dim=-1).mean()


def synthetic_tremor(cfg, n_series=64):
    t = torch.arange(cfg["window"] + 1).float()
    phase = torch.rand(n_series, 1) * 6.28
    base = torch.sin(t / 4.0 + phase) + 0.3 * torch.randn(n_series, cfg["window"] + 1)
    feats = base[:, :-1].unsqueeze(-1) * torch.linspace(0.5, 1.5, cfg["features"])
    target = base[:, -1] + 0.2 * torch.randn(n_series)
    return feats, target


class Trainer:
    def __init__(self, model, cfg):
        self.model = model
        self.cfg = cfg
        self.optimizer = torch.optim.RMSprop(model.parameters(), lr=cfg["lr"])

    def fit_epoch(self, feats, target):
        perm = torch.randperm(feats.shape[0])
        running = 0.0
        for b in range(self.cfg["batches_per_epoch"]):
            idx = perm[b * self.cfg["batch"]:(b + 1) * self.cfg["batch"]]
            logit_pi, mu, log_sigma = self.model(feats[idx])
            nll = mixture_nll(logit_pi, mu, log_sigma, target[idx])
            self.optimizer.zero_grad()
            nll.backward()
            nn.utils.clip_grad_norm_(self.model.parameters(), 5.0)
            self.optimizer.step()
            running += nll.item()
        return running / self.cfg["batches_per_epoch"]


def main():
    torch.manual_seed(5)
    feats, target = synthetic_tremor(CFG)
    model = TremorMDN(CFG)
    trainer = Trainer(model, CFG)
    for epoch in range(CFG["epochs"]):
        print(f"epoch {epoch}: nll {trainer.fit_epoch(feats, target):.4f}")


if __name__ == "__main__":
    main()
