"""Rollercoaster ride comfort per rider, meta-learned (MeLU-style) from a few rated rides per rider.

Source: https://github.com/waterhorse1/MELU_pytorch/issues/4

The report: running a MeLU implementation (MAML-based user preference estimator: embeddings of user
and item attributes, decision layers, a local update per user computed with torch.autograd.grad) on
the author's own data raised "One of the differentiated Tensors appears to not have been used in the
graph. Set allow_unused=True if this is the desired behavior." from the local update: the gradient is
taken with respect to every parameter of the model, and with the author's data one of the attribute
embeddings never enters the forward.

Reduction: a comfort estimator with rider embeddings, a ride-element encoder and an optional
track-profile embedding that this park's configuration leaves out; per rider, a first-order local
update on the rider's support rides, then the meta-update on the query rides.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

PARK_CFG = {
    "n_age_bands": 6,
    "n_height_bands": 5,
    "n_track_profiles": 8,
    "use_track_profile": False,
    "ride_features": 7,  # peak g, lateral g, airtime, inversions, duration, speed, drop
    "emb": 8,
    "hidden": 32,
    "riders_per_batch": 4,
    "support": 5,
    "query": 5,
    "local_lr": 0.05,
    "meta_lr": 5e-3,
    "meta_steps": 4,
}


class ComfortEstimator(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.age_emb = nn.Embedding(cfg["n_age_bands"], cfg["emb"])
        self.height_emb = nn.Embedding(cfg["n_height_bands"], cfg["emb"])
        self.track_emb = nn.Embedding(cfg["n_track_profiles"], cfg["emb"])
        self.ride_enc = nn.Linear(cfg["ride_features"], cfg["emb"])
        self.fc1 = nn.Linear(3 * cfg["emb"], cfg["hidden"])
        self.fc2 = nn.Linear(cfg["hidden"], cfg["hidden"])
        self.out = nn.Linear(cfg["hidden"], 1)

    def functional_forward(self, batch, params):
        age = F.embedding(batch["age"], params["age_emb.weight"])
        height = F.embedding(batch["height"], params["height_emb.weight"])
        ride = F.linear(batch["ride"], params["ride_enc.weight"], params["ride_enc.bias"])
        if self.cfg["use_track_profile"]:
            ride = ride + F.embedding(batch["track"], params["track_emb.weight"])
        h = torch.cat([age, height, ride], dim=-1)
        h = F.relu(F.linear(h, params["fc1.weight"], params["fc1.bias"]))
        h = F.relu(F.linear(h, params["fc2.weight"], params["fc2.bias"]))
        return F.linear(h, params["out.weight"], params["out.bias"]).squeeze(-1)


def local_update(model, support, lr):
    params = dict(model.named_parameters())
    support_loss = F.mse_loss(model.functional_forward(support, params), support["comfort"])
    grads = torch.autograd.grad(support_loss, list(params.values()), allow_unused=True)
    return {name: p if g is None else p - lr * g for (name, p), g in zip(params.items(), grads)}


def rider_task(cfg, n):
    age = torch.full((n,), int(torch.randint(0, cfg["n_age_bands"], ())))
    height = torch.full((n,), int(torch.randint(0, cfg["n_height_bands"], ())))
    ride = torch.randn(n, cfg["ride_features"])
    track = torch.randint(0, cfg["n_track_profiles"], (n,))
    sensitivity = 0.3 + 0.1 * age.float()
    comfort = 5.0 - sensitivity * ride[:, 0].abs() - 0.4 * ride[:, 1].abs() + 0.1 * torch.randn(n)
    return {"age": age, "height": height, "ride": ride, "track": track, "comfort": comfort}


def split(task, k):
    return ({key: v[:k] for key, v in task.items()}, {key: v[k:] for key, v in task.items()})


def meta_train(cfg):
    melu = ComfortEstimator(cfg)
    meta_opt = torch.optim.Adam(melu.parameters(), lr=cfg["meta_lr"])
    for step in range(cfg["meta_steps"]):
        query_losses = []
        for _ in range(cfg["riders_per_batch"]):
            support, query = split(rider_task(cfg, cfg["support"] + cfg["query"]), cfg["support"])
            fast = local_update(melu, support, cfg["local_lr"])
            pred = melu.functional_forward(query, fast)
            query_losses.append(F.mse_loss(pred, query["comfort"]))
        meta_loss = torch.stack(query_losses).mean()
        meta_opt.zero_grad()
        meta_loss.backward()
        meta_opt.step()
        print(f"meta step {step} query mse {meta_loss.item():.4f}")


if __name__ == "__main__":
    meta_train(PARK_CFG)
