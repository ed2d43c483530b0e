"""Diving score prediction: regress a judge panel's score for a dive from per-phase body
keypoint features (take-off, flight, entry), with an input-sensitivity penalty so that
small keypoint jitter does not swing the predicted score.

Source: https://github.com/pytorch/pytorch/issues/727 ("F.relu(inplace) followed by
F.dropout(inplace) breaks backward pass"). The reporter applied ``F.relu(x, inplace=True)``
and ``F.dropout(x, p=0.1, inplace=True)`` directly to a tensor created with
``requires_grad=True``; the maintainer's answer: in-place ops cannot be applied to leaf
Variables, remove the ``inplace`` flag.

Reduction (the writer's): the leaf is the batch of keypoint features, marked
``requires_grad`` because the sensitivity penalty differentiates the score with respect
to them; the model's input stage rectifies and drops out those features in place.
Synthetic dives, small sizes.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

HP = {"n_dives": 90, "phases": 3, "kp_feats": 10, "hidden": 40, "batch": 15,
      "lr": 1e-3, "epochs": 2, "p_drop": 0.1, "sens_weight": 0.05}


def dive_dataset(hp):
    feats = torch.randn(hp["n_dives"], hp["phases"] * hp["kp_feats"])
    difficulty = 1.6 + 2.0 * torch.rand(hp["n_dives"], 1)
    execution = 7.0 + torch.tanh(feats[:, :8].mean(dim=1, keepdim=True)) * 2.0
    return feats, difficulty, (execution * difficulty * 3).squeeze(1)


class DiveScorer(nn.Module):
    def __init__(self, n_in, hidden, p_drop):
        super().__init__()
        self.p_drop = p_drop
        self.mlp = nn.Sequential(nn.Linear(n_in + 1, hidden), nn.Tanh(),
                                 nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, 1))

    def input_stage(self, feats):
        feats = F.relu(feats)
        feats = F.dropout(feats, p=self.p_drop, training=self.training)
        return feats

    def forward(self, feats, difficulty):
        x = self.input_stage(feats)
        return self.mlp(torch.cat([x, difficulty], dim=1)).squeeze(1) * 10.0


def fit(scorer, optim, feats, difficulty, scores):
    scorer.train()
    for epoch in range(HP["epochs"]):
        order = torch.randperm(feats.shape[0])
        for start in range(0, feats.shape[0], HP["batch"]):
            idx = order[start:start + HP["batch"]]
            kp = feats[idx].clone().requires_grad_(True)
            pred = scorer(kp, difficulty[idx])
            score_loss = F.mse_loss(pred, scores[idx])
            (grad_kp,) = torch.autograd.grad(pred.sum(), kp, create_graph=True)
            sens_loss = grad_kp.pow(2).sum(dim=1).mean()
            total = score_loss + HP["sens_weight"] * sens_loss
            optim.zero_grad()
            total.backward()
            optim.step()
        print(f"epoch {epoch}: score mse {score_loss.item():.3f}")


def main():
    feats, difficulty, scores = dive_dataset(HP)
    scorer = DiveScorer(HP["phases"] * HP["kp_feats"], HP["hidden"], HP["p_drop"])
    optim = torch.optim.Adam(scorer.parameters(), lr=HP["lr"])
    fit(scorer, optim, feats, difficulty, scores)


if __name__ == "__main__":
    main()
