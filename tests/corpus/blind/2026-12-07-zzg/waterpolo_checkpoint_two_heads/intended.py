"""Water-polo pass prediction: from the positions of the 14 players, who receives the ball, and is it picked off?

Source: https://github.com/pytorch/pytorch/pull/63524 ("Replace checkpointing implementation"). Its test edit
shows the case: several outputs of one torch.utils.checkpoint region are backpropagated one after another,
``res[1].sum().backward(retain_graph=True)`` ... ``res[6].sum().backward()``, and the test asserted that a
further backward then fails with "Trying to backward through the graph a second time": the checkpoint node
that produced all outputs is freed by the first backward without retain_graph. This script reduces that to a
training step: a checkpointed player-interaction trunk feeds a receiver head and an interception head, and the
step backpropagates each head's loss on its own to free activations early.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

HP = {"players": 14, "coords": 4, "width": 48, "plays": 80, "batch": 20, "epochs": 2, "lr": 0.05, "momentum": 0.9}


class PoolTrunk(nn.Module):
    """Per-player embedding, one round of attention between players, pooled summary."""

    def __init__(self, coords, width):
        super().__init__()
        self.embed = nn.Linear(coords, width)
        self.attn = nn.MultiheadAttention(width, 4, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, width))

    def run(self, players):
        h = self.embed(players)
        h = h + self.attn(h, h, h, need_weights=False)[0]
        h = h + self.ff(h)
        return h, h.mean(1)

    def forward(self, players):
        return checkpoint(self.run, players, use_reentrant=False)


class PassModel(nn.Module):
    def __init__(self, coords, width):
        super().__init__()
        self.trunk = PoolTrunk(coords, width)
        self.receiver_head = nn.Linear(width, 1)
        self.intercept_head = nn.Sequential(nn.Linear(width, width // 2), nn.ReLU(), nn.Linear(width // 2, 1))

    def forward(self, players):
        per_player, summary = self.trunk(players)
        receiver_logits = self.receiver_head(per_player[:, :7]).squeeze(-1)
        intercept_logit = self.intercept_head(summary).squeeze(-1)
        return receiver_logits, intercept_logit


def synth_plays(n, players, coords):
    """x, y, vx, vy for 7 attackers then 7 defenders; the open attacker nearest goal receives the pass."""
    pos = torch.randn(n, players, coords)
    attackers, defenders = pos[:, :7, :2], pos[:, 7:, :2]
    marking = torch.cdist(attackers, defenders).min(-1).values
    receiver = (marking - 0.3 * attackers[..., 0]).argmax(1)
    picked = (marking.gather(1, receiver[:, None]).squeeze(1) < 0.6).float()
    return pos, receiver, picked


def train_step(model, poolside_opt, players, receiver, picked):
    poolside_opt.zero_grad()
    receiver_logits, intercept_logit = model(players)
    pass_loss = F.cross_entropy(receiver_logits, receiver)
    intercept_loss = F.binary_cross_entropy_with_logits(intercept_logit, picked)
    (pass_loss + intercept_loss).backward()
    poolside_opt.step()
    return pass_loss.item(), intercept_loss.item()


def main():
    torch.manual_seed(1900)
    plays = synth_plays(HP["plays"], HP["players"], HP["coords"])
    pass_model = PassModel(HP["coords"], HP["width"])
    poolside_opt = torch.optim.SGD(pass_model.parameters(), lr=HP["lr"], momentum=HP["momentum"])
    for epoch in range(HP["epochs"]):
        for i in range(0, HP["plays"], HP["batch"]):
            batch = [t[i:i + HP["batch"]] for t in plays]
            losses = train_step(pass_model, poolside_opt, *batch)
        print(f"epoch {epoch}: pass {losses[0]:.3f} intercept {losses[1]:.3f}")


if __name__ == "__main__":
    main()
