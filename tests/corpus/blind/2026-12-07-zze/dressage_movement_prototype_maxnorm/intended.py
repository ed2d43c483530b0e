"""Dressage scoring: predict the judges' 0-10 mark for every movement of a ride from the movement
type and its execution features, with the movement embeddings kept inside the unit ball and a
prototype context built from the whole movement table.

Source: https://github.com/pytorch/pytorch/pull/45595 ("Add note about in-place weight modification
for nn.Embedding", fixing the report that nn.Embedding with max_norm raises a RuntimeError depending
on line order). With ``max_norm`` set, ``Embedding.forward`` renormalises the looked-up rows of
``weight`` in place; a computation that used ``Embedding.weight`` before that forward (the report's
``embedding.weight @ W.t()`` followed by ``embedding(idx) @ W.t()``) then fails in backward. The
reduction: the scorer first projects the full movement table into per-test prototypes, then embeds the
ride's movements with the same max_norm embedding.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

MOVEMENTS = ["halt", "extended_trot", "half_pass", "shoulder_in", "pirouette", "piaffe",
             "passage", "flying_change", "rein_back", "collected_canter", "extended_walk", "serpentine"]
N_EXEC = 4  # rhythm, impulsion, accuracy, submission
HP = {"dim": 16, "batch": 24, "seq": 9, "lr": 2e-3, "epochs": 4}


def synth_tests(n_rides, seq):
    ids = torch.randint(0, len(MOVEMENTS), (n_rides, seq))
    execution = torch.rand(n_rides, seq, N_EXEC)
    difficulty = torch.linspace(0.4, 1.0, len(MOVEMENTS))[ids]
    marks = 4.0 + 5.0 * (execution.mean(-1) * (1.2 - 0.4 * difficulty)) + 0.2 * torch.randn(n_rides, seq)
    return ids, execution, marks.clamp(0, 10)


class MovementScorer(nn.Module):
    def __init__(self, n_movements, dim):
        super().__init__()
        self.movement_emb = nn.Embedding(n_movements, dim, max_norm=1.0)
        self.prototype = nn.Linear(dim, dim)
        self.exec_proj = nn.Linear(N_EXEC, dim)
        self.mark_head = nn.Sequential(nn.Linear(2 * dim, dim), nn.GELU(), nn.Linear(dim, 1))

    def forward(self, ids, execution):
        protos = self.prototype(self.movement_emb.weight.clone())   # (M, d)
        moves = self.movement_emb(ids)                              # (B, S, d)
        attn = torch.softmax(moves @ protos.t(), dim=-1)           # (B, S, M)
        context = attn @ protos
        h = torch.cat([moves + self.exec_proj(execution), context], dim=-1)
        return 10.0 * torch.sigmoid(self.mark_head(h).squeeze(-1))


def train_epoch(scorer, judge_opt, ids, execution, marks, batch):
    total = 0.0
    for i in range(0, ids.shape[0], batch):
        pred = scorer(ids[i:i + batch], execution[i:i + batch])
        mark_loss = F.mse_loss(pred, marks[i:i + batch])
        judge_opt.zero_grad()
        mark_loss.backward()
        judge_opt.step()
        total += mark_loss.item()
    return total


def main():
    ids, execution, marks = synth_tests(96, HP["seq"])
    scorer = MovementScorer(len(MOVEMENTS), HP["dim"])
    judge_opt = torch.optim.AdamW(scorer.parameters(), lr=HP["lr"], weight_decay=1e-4)
    for epoch in range(HP["epochs"]):
        total = train_epoch(scorer, judge_opt, ids, execution, marks, HP["batch"])
        print(f"epoch {epoch}: summed mark loss {total:.3f}")


if __name__ == "__main__":
    main()
