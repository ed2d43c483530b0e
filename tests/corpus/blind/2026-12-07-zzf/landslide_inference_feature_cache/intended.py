"""Landslide risk: a trainable risk head over terrain-tile features from a frozen encoder, cached once.

Source: https://github.com/pytorch/pytorch/pull/53343

The report: the pull request that made ``InferenceMode`` a public API and defined
its error handling: tensors created under inference mode are inference tensors,
and autograd refuses to save one for backward ("Inference tensors cannot be saved
for backward"). This script embeds every terrain tile once with a frozen encoder
inside a ``torch.inference_mode()`` helper, to save time, and then trains a small
risk head on slices of that cache: the first ``Linear`` of the head saves its
input, a slice of an inference tensor, for the weight's gradient.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

CFG = {"n_tiles": 120, "bands": 7, "embed": 24, "hidden": 32, "batch": 30, "lr": 5e-3, "epochs": 2}


class TerrainEncoder(nn.Module):
    """Stands in for a pretrained encoder of slope, curvature, NDVI, rainfall and soil bands."""

    def __init__(self, bands, embed):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(bands, 64), nn.GELU(), nn.Linear(64, embed))

    def forward(self, tiles):
        return self.net(tiles)


class RiskHead(nn.Module):
    def __init__(self, embed, hidden):
        super().__init__()
        self.fc1 = nn.Linear(embed, hidden)
        self.fc2 = nn.Linear(hidden, 1)

    def forward(self, feats):
        return self.fc2(F.relu(self.fc1(feats))).squeeze(-1)


@torch.no_grad()
def build_feature_cache(encoder, tiles):
    encoder.eval()
    return encoder(tiles)


def survey_tiles(cfg):
    tiles = torch.randn(cfg["n_tiles"], cfg["bands"])
    slope, rain = tiles[:, 0], tiles[:, 3]
    failed = ((0.8 * slope + 0.6 * rain + 0.3 * torch.randn(cfg["n_tiles"])) > 0.7).float()
    return tiles, failed


def main():
    torch.manual_seed(404)
    cfg = CFG
    tiles, failed = survey_tiles(cfg)
    encoder = TerrainEncoder(cfg["bands"], cfg["embed"])
    for p in encoder.parameters():
        p.requires_grad_(False)
    features = build_feature_cache(encoder, tiles)
    risk_head = RiskHead(cfg["embed"], cfg["hidden"])
    head_opt = torch.optim.Adam(risk_head.parameters(), lr=cfg["lr"])
    pos_weight = torch.tensor([(failed == 0).sum().item() / max((failed == 1).sum().item(), 1)])
    for epoch in range(cfg["epochs"]):
        for start in range(0, cfg["n_tiles"], cfg["batch"]):
            feats = features[start : start + cfg["batch"]]
            head_opt.zero_grad()
            logits = risk_head(feats)
            risk_loss = F.binary_cross_entropy_with_logits(logits, failed[start : start + cfg["batch"]], pos_weight=pos_weight)
            risk_loss.backward()
            head_opt.step()
        print(f"epoch {epoch}: risk loss {risk_loss.item():.4f}")


if __name__ == "__main__":
    main()
