"""Biathlon shooting and skiing splits: predict the next range visit's shooting pattern.

Source: https://github.com/facebookresearch/fairseq/issues/760 ("Why inplace operation in
`AdaptiveSoftmax`"). The author trains with the log-probabilities of fairseq's
AdaptiveSoftmax (``get_log_prob``), which fills a preallocated ``log_probs`` buffer, copies
each tail cluster's output into its slice with ``copy_`` and adds the cluster prior with
``add_`` on the log-softmax output; backward complains about an in-place operation, and the
author's change to an out-of-place ``self.lsm(tail_out) + tail_priors[...]`` trains. The
writer's reduction: an adaptive softmax over the 32 hit/miss patterns of a five-shot bout,
frequent patterns in the head, rare ones in two tail clusters, whose ``get_log_prob`` adds
the cluster prior in place onto the log-softmax output; the loss is an NLL on that buffer.
Athlete features (previous ski splits, heart rate at range entry, wind) are synthetic.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

HP = {"n_visits": 120, "n_features": 12, "hidden": 32, "cutoff": [8, 20, 32], "batch": 24, "lr": 5e-3, "epochs": 2}


class AdaptiveSoftmax(nn.Module):
    def __init__(self, hidden, cutoff):
        super().__init__()
        self.cutoff = cutoff
        n_tail = len(cutoff) - 1
        self.head = nn.Linear(hidden, cutoff[0] + n_tail)
        self.tail = nn.ModuleList(
            nn.Sequential(nn.Linear(hidden, hidden // (2 ** (i + 1))), nn.Linear(hidden // (2 ** (i + 1)), cutoff[i + 1] - cutoff[i]))
            for i in range(n_tail)
        )
        self.lsm = nn.LogSoftmax(dim=1)

    def get_log_prob(self, x):
        n_tail = len(self.tail)
        log_probs = x.new_zeros(x.shape[0], self.cutoff[-1])
        head_log = self.lsm(self.head(x))
        log_probs[:, : self.cutoff[0]] = head_log[:, : self.cutoff[0]]
        tail_priors = head_log[:, self.cutoff[0]: self.cutoff[0] + n_tail]
        for i in range(n_tail):
            start, end = self.cutoff[i], self.cutoff[i + 1]
            tail_out = self.tail[i](x)
            log_probs[:, start:end] = self.lsm(tail_out) + tail_priors[:, i, None]
        return log_probs


class RangeVisitModel(nn.Module):
    def __init__(self, n_features, hidden, cutoff):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.adaptive = AdaptiveSoftmax(hidden, cutoff)

    def forward(self, x):
        return self.adaptive.get_log_prob(self.body(x))


def pattern_frequency_rank(n_patterns=32):
    misses = torch.tensor([bin(p).count("1") for p in range(n_patterns)])
    return torch.argsort(misses, stable=True)


def synth_visits(hp):
    x = torch.randn(hp["n_visits"], hp["n_features"])
    skill = x[:, 0] * 0.8 - x[:, 1] * 0.5
    n_miss = torch.clamp((1.5 - skill + 0.7 * torch.randn(hp["n_visits"])).round(), 0, 5).long()
    rank = pattern_frequency_rank()
    target = torch.clamp(n_miss * 6 + torch.randint(0, 6, (hp["n_visits"],)), max=31)
    return x, rank[target]


def run_epoch(visit_model, opt, data, hp):
    x, y = data
    total = 0.0
    for i in range(0, x.shape[0], hp["batch"]):
        log_probs = visit_model(x[i:i + hp["batch"]])
        nll = F.nll_loss(log_probs, y[i:i + hp["batch"]])
        opt.zero_grad()
        nll.backward()
        opt.step()
        total += nll.item()
    return total


def main():
    torch.manual_seed(21)
    data = synth_visits(HP)
    visit_model = RangeVisitModel(HP["n_features"], HP["hidden"], HP["cutoff"])
    opt = torch.optim.RMSprop(visit_model.parameters(), lr=HP["lr"])
    for epoch in range(HP["epochs"]):
        print(f"epoch {epoch}: nll {run_epoch(visit_model, opt, data, HP):.3f}")


if __name__ == "__main__":
    main()
