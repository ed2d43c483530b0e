"""Figure-skating performance: jump type and grade of execution from blade-tracker windows.

Source: https://stackoverflow.com/questions/53994625 ("How can i process multi loss in pytorch?").
The author had one network with two losses and asked how to backpropagate them: one
``backward()`` per loss, or one on their sum. Losses that share a forward cannot be backwarded one
after the other unless the first call keeps the graph (``retain_graph=True``), since the first
backward frees the shared part; summing them and calling ``backward()`` once gives the same
gradients in one pass.

Reduction: a 1-D conv encoder over IMU windows from a skater's boot feeds two heads, a jump-type
classifier and a grade-of-execution (GOE) regressor. The trainer keeps a table of objectives and
backwards each one as it is computed, then steps once per batch.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

JUMPS = ["toe", "salchow", "loop", "flip", "lutz", "axel"]
CFG = {"channels": 6, "window": 64, "batch": 16, "n_batches": 5, "epochs": 2, "lr": 1e-3,
       "goe_weight": 0.5}


def make_batches(cfg):
    batches = []
    for _ in range(cfg["n_batches"]):
        x = torch.randn(cfg["batch"], cfg["channels"], cfg["window"])
        jump = torch.randint(0, len(JUMPS), (cfg["batch"],))
        goe = (torch.randn(cfg["batch"]) * 1.5).clamp(-5, 5)
        x[:, 2] += jump.float().unsqueeze(-1) * 0.3
        batches.append((x, jump, goe))
    return batches


class TakeoffEncoder(nn.Module):
    def __init__(self, channels, width=32):
        super().__init__()
        self.conv1 = nn.Conv1d(channels, width, 5, padding=2)
        self.conv2 = nn.Conv1d(width, width, 5, padding=2, stride=2)
        self.norm = nn.BatchNorm1d(width)

    def forward(self, x):
        h = F.gelu(self.conv1(x))
        h = F.gelu(self.norm(self.conv2(h)))
        return h.mean(dim=-1)


class SkatingScorer(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.encoder = TakeoffEncoder(channels)
        self.jump_head = nn.Linear(32, len(JUMPS))
        self.goe_head = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        z = self.encoder(x)
        return self.jump_head(z), self.goe_head(z).squeeze(-1)


def jump_objective(out, batch, cfg):
    return F.cross_entropy(out[0], batch[1])


def goe_objective(out, batch, cfg):
    return cfg["goe_weight"] * F.mse_loss(out[1], batch[2])


OBJECTIVES = {"jump": jump_objective, "goe": goe_objective}


def train_batch(model, optimizer, batch, cfg):
    optimizer.zero_grad()
    out = model(batch[0])
    logged = {}
    for name, objective in OBJECTIVES.items():
        term = objective(out, batch, cfg)
        term.backward()
        logged[name] = term.item()
    optimizer.step()
    return logged


def main(cfg=CFG):
    batches = make_batches(cfg)
    scorer = SkatingScorer(cfg["channels"])
    optimizer = torch.optim.AdamW(scorer.parameters(), lr=cfg["lr"], weight_decay=1e-4)
    for epoch in range(cfg["epochs"]):
        for batch in batches:
            logged = train_batch(scorer, optimizer, batch, cfg)
        print(epoch, {k: round(v, 4) for k, v in logged.items()})


if __name__ == "__main__":
    main()
