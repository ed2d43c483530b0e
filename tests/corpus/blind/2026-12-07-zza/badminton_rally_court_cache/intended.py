"""Badminton rally outcome prediction with a court-context tensor memoised on the model.

Source: https://github.com/pytorch/pytorch/issues/30297 -- the author trains a detector
whose forward returns a dict of losses; the loop sums them (``losses = sum(loss for loss
in loss_dict.values())``), calls ``losses.backward()`` once per iteration and still gets
"Trying to backward through the graph a second time" on the second iteration.

Reduction: the same loop shape (a model returning a loss dict, summed and backpropagated
once per iteration, from a trainer method). The model keeps a court-context tensor that it
builds from its learnable court-zone embedding the first time it runs and reuses on every
later call, so the second ``losses.backward()`` walks into the first iteration's graph.
The training setting (rally winner and rally length from shot sequences) is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)

CFG = {
    "n_zones": 12,          # court zones a shuttle can land in
    "shot_feats": 6,        # per-shot features: speed, height, angle, ...
    "rally_len": 10,
    "hidden": 32,
    "batch": 16,
    "steps": 6,
    "lr": 3e-3,
}


def make_rallies(n, cfg):
    shots = torch.randn(n, cfg["rally_len"], cfg["shot_feats"])
    zones = torch.randint(0, cfg["n_zones"], (n, cfg["rally_len"]))
    winner = torch.randint(0, 2, (n,))
    length = torch.rand(n) * 20.0 + 3.0
    return shots, zones, winner, length


class RallyPredictor(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.zone_embed = nn.Embedding(cfg["n_zones"], cfg["hidden"])
        self.court_mix = nn.Linear(cfg["hidden"], cfg["hidden"])
        self.shot_proj = nn.Linear(cfg["shot_feats"], cfg["hidden"])
        self.gru = nn.GRU(cfg["hidden"], cfg["hidden"], batch_first=True)
        self.winner_head = nn.Linear(cfg["hidden"], 2)
        self.length_head = nn.Linear(cfg["hidden"], 1)

    def court_context(self):
        return torch.tanh(self.court_mix(self.zone_embed.weight))

    def forward(self, shots, zones, winner=None, length=None):
        ctx = self.court_context()
        h = self.shot_proj(shots) + ctx[zones]
        out, _ = self.gru(h)
        last = out[:, -1]
        logits = self.winner_head(last)
        pred_len = self.length_head(last).squeeze(-1)
        if winner is None:
            return logits, pred_len
        return {
            "loss_winner": F.cross_entropy(logits, winner),
            "loss_length": 0.01 * F.mse_loss(pred_len, length),
        }


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.history = []

    def train_step(self, batch):
        shots, zones, winner, length = batch
        loss_dict = self.model(shots, zones, winner, length)
        losses = sum(loss for loss in loss_dict.values())
        self.optimizer.zero_grad()
        losses.backward()
        self.optimizer.step()
        self.history.append({k: v.item() for k, v in loss_dict.items()})
        return losses.item()


def main():
    data = make_rallies(CFG["batch"] * CFG["steps"], CFG)
    model = RallyPredictor(CFG)
    optimizer = torch.optim.Adam(model.parameters(), lr=CFG["lr"])
    trainer = Trainer(model, optimizer)
    for it in range(CFG["steps"]):
        sl = slice(it * CFG["batch"], (it + 1) * CFG["batch"])
        batch = tuple(t[sl] for t in data)
        total = trainer.train_step(batch)
        print(f"iter {it} loss {total:.4f}")


if __name__ == "__main__":
    main()
