"""Esports match outcome prediction: one trunk, a win-probability head and a gold-margin head.

Source: https://discuss.pytorch.org/t/what-does-the-backward-function-do/9944
The thread asks what ``loss.backward()`` does; the accepted answer ends with "If you have
multiple losses (loss1, loss2) you can sum them and then call backwards once". The writer
reduces the situation that answer addresses: a model with two losses computed from one
forward pass, where each loss is sent through a small helper that calls ``backward()`` on
it, once per head, before a single optimizer step. The setting (draft and early-game
features of esports matches, win probability plus gold margin at 15 minutes) is the
writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)

CONFIG = {
    "n_matches": 256,
    "n_features": 24,
    "hidden": 48,
    "batch_size": 32,
    "epochs": 3,
    "lr": 3e-3,
    "margin_weight": 0.5,
}


def make_matches(n, d):
    """Synthetic match table: draft/early-game features, win label, gold margin (scaled)."""
    feats = torch.randn(n, d)
    skill_gap = feats[:, :4].sum(dim=1) * 0.6 + 0.3 * torch.randn(n)
    won = (skill_gap > 0).float()
    gold_margin = (skill_gap * 1.5 + 0.2 * torch.randn(n)).unsqueeze(1)
    return feats, won, gold_margin


class MatchOutcomeNet(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.win_head = nn.Linear(hidden, 1)
        self.margin_head = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.trunk(x)
        return self.win_head(h).squeeze(1), self.margin_head(h)


def apply_head_loss(loss, weight=1.0):
    """Back-propagate one head's loss (weighted) into the shared parameters."""
    (weight * loss).backward()
    return loss.item()


def train_epoch(model, optimizer, feats, won, margin, cfg):
    model.train()
    stats = {"win": 0.0, "margin": 0.0}
    perm = torch.randperm(feats.shape[0])
    for start in range(0, feats.shape[0], cfg["batch_size"]):
        idx = perm[start:start + cfg["batch_size"]]
        optimizer.zero_grad()
        win_logit, margin_pred = model(feats[idx])
        win_loss = F.binary_cross_entropy_with_logits(win_logit, won[idx])
        margin_loss = F.smooth_l1_loss(margin_pred, margin[idx])
        stats["win"] += apply_head_loss(win_loss)
        stats["margin"] += apply_head_loss(margin_loss, cfg["margin_weight"])
        optimizer.step()
    return stats


def main():
    feats, won, margin = make_matches(CONFIG["n_matches"], CONFIG["n_features"])
    model = MatchOutcomeNet(CONFIG["n_features"], CONFIG["hidden"])
    optimizer = torch.optim.Adam(model.parameters(), lr=CONFIG["lr"])
    for epoch in range(CONFIG["epochs"]):
        stats = train_epoch(model, optimizer, feats, won, margin, CONFIG)
        print(f"epoch {epoch}: win {stats['win']:.3f} margin {stats['margin']:.3f}")


if __name__ == "__main__":
    main()
