"""Archive document dating: a small transformer over per-line features of a manuscript page.

Source: https://github.com/keras-team/keras-core/pull/727 . The Token Learner example of
keras-core failed under the torch backend with "Trying to backward through the graph a second
time". Its position encoder looked its position table up once, when the layer was built, and
added that stored tensor to every batch; the first training step freed the lookup's graph and
the second step's backward went through it again. The PR moved the lookup into the layer's
call, so it runs on every forward.

Reduction: the writer's setting is a museum archive dating undated letters. Each page is a
sequence of text lines, each line a vector of measured features (ink density, stroke slant,
paper fibre reflectance, ...). A position embedding layer builds its table lookup in __init__
and keeps the result on the layer; the encoder adds it to the line features on every call.
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(7)

CONFIG = {
    "lines_per_page": 12,
    "line_features": 10,
    "d_model": 32,
    "heads": 4,
    "pages": 96,
    "batch_size": 16,
    "epochs": 2,
    "lr": 3e-3,
    "year_range": (1650.0, 1900.0),
}


class LinePositionEmbedding(nn.Module):
    def __init__(self, num_lines, dim):
        super().__init__()
        self.table = nn.Embedding(num_lines, dim)
        self.register_buffer("line_index", torch.arange(num_lines), persistent=False)

    def forward(self, x):
        return x + self.table(self.line_index).unsqueeze(0)


class PageEncoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["d_model"]
        self.project = nn.Linear(cfg["line_features"], d)
        self.position = LinePositionEmbedding(cfg["lines_per_page"], d)
        self.block = nn.TransformerEncoderLayer(d, cfg["heads"], dim_feedforward=2 * d,
                                                dropout=0.0, batch_first=True)
        self.head = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 1))

    def forward(self, lines):
        h = self.position(self.project(lines))
        h = self.block(h)
        return self.head(h.mean(dim=1)).squeeze(-1)


def make_archive(cfg):
    n, L, f = cfg["pages"], cfg["lines_per_page"], cfg["line_features"]
    era = torch.rand(n)
    slant_drift = torch.linspace(-1.0, 1.0, L)
    lines = torch.randn(n, L, f) * 0.5
    lines[:, :, 0] += era.unsqueeze(1) * 2.0
    lines[:, :, 1] += era.unsqueeze(1) * slant_drift
    lo, hi = cfg["year_range"]
    years = lo + era * (hi - lo)
    return lines, years


def to_unit(years, cfg):
    lo, hi = cfg["year_range"]
    return (years - lo) / (hi - lo)


def run_epoch(model, optimizer, lines, years, cfg):
    criterion = nn.SmoothL1Loss(beta=0.05)
    order = torch.randperm(lines.shape[0])
    total = 0.0
    for start in range(0, lines.shape[0], cfg["batch_size"]):
        idx = order[start:start + cfg["batch_size"]]
        pred = model(lines[idx])
        loss = criterion(pred, to_unit(years[idx], cfg))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item() * len(idx)
    return total / lines.shape[0]


def main():
    lines, years = make_archive(CONFIG)
    model = PageEncoder(CONFIG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=CONFIG["lr"], weight_decay=1e-4)
    lo, hi = CONFIG["year_range"]
    for epoch in range(CONFIG["epochs"]):
        avg = run_epoch(model, optimizer, lines, years, CONFIG)
        print(f"epoch {epoch}: loss {avg:.4f} (~{math.sqrt(avg) * (hi - lo):.0f} years)")


if __name__ == "__main__":
    main()
