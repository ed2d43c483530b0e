"""Crowd simulation: a social-force model whose pedestrian interaction force is learned by a network.

Source: https://github.com/pyg-team/pytorch_geometric/pull/5353 -- "Replace in-place operations by
out-of-place ones": PyG's aggregations moved to `torch.scatter_reduce`, whose output must not be
modified in place during training ("autograd complains about modification of tensor needed for
backward step"); layers that post-processed the aggregated messages in place were rewritten
out-of-place.

What the author was doing: pedestrians on a plaza walk towards goals. Each pedestrian feels a goal
(driving) force, relaxing its velocity towards a preferred speed along the goal direction, plus the
sum of pairwise repulsion forces from neighbours within a radius. The pairwise force is an MLP on
relative position and velocity (message passing over a radius graph), summed per receiver with
`scatter_reduce`; the driving force is then added onto that aggregate in place. Trajectories are
rolled out with explicit Euler steps and fitted to observed tracks. The training setting is the
writer's; the in-place update of a `scatter_reduce` aggregate is the report's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_PED, DT, STEPS, RADIUS = 12, 0.2, 6, 2.5


def radius_graph(pos, r):
    d = torch.cdist(pos, pos)
    src, dst = torch.nonzero((d < r) & (d > 0), as_tuple=True)
    return src, dst


class LearnedSocialForce(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.pair_mlp = nn.Sequential(nn.Linear(5, hidden), nn.Tanh(), nn.Linear(hidden, hidden),
                                      nn.Tanh(), nn.Linear(hidden, 2))
        self.log_tau = nn.Parameter(torch.tensor(-0.5))     # relaxation time
        self.log_v0 = nn.Parameter(torch.tensor(0.0))       # preferred speed

    def interaction(self, pos, vel):
        src, dst = radius_graph(pos.detach(), RADIUS)
        rel_p = pos[src] - pos[dst]
        rel_v = vel[src] - vel[dst]
        dist = rel_p.norm(dim=-1, keepdim=True)
        msg = self.pair_mlp(torch.cat([rel_p, rel_v, dist], dim=-1))
        index = dst.unsqueeze(-1).expand(-1, 2)
        return torch.zeros_like(pos).scatter_reduce(0, index, msg, reduce="sum", include_self=False)

    def forward(self, pos, vel, goal):
        force = self.interaction(pos, vel)
        e = F.normalize(goal - pos, dim=-1)
        force = force + (self.log_v0.exp() * e - vel) / self.log_tau.exp()
        return force


def rollout(model, pos, vel, goal, steps):
    traj = []
    for _ in range(steps):
        acc = model(pos, vel, goal)
        vel = vel + DT * acc
        pos = pos + DT * vel
        traj.append(pos)
    return torch.stack(traj, dim=1)


@torch.no_grad()
def observed_tracks(n_scenes):
    """Ground truth: classic exponential repulsion social force, v0=1.3, tau=0.5."""
    scenes = []
    for _ in range(n_scenes):
        pos = torch.rand(N_PED, 2) * 6
        vel = torch.randn(N_PED, 2) * 0.3
        goal = torch.rand(N_PED, 2) * 6
        p, v, traj = pos.clone(), vel.clone(), []
        for _ in range(STEPS):
            diff = p.unsqueeze(1) - p.unsqueeze(0)
            d = diff.norm(dim=-1, keepdim=True) + torch.eye(N_PED).unsqueeze(-1)
            rep = (2.0 * torch.exp(-d / 0.4) * diff / d).sum(1)
            drive = (1.3 * F.normalize(goal - p, dim=-1) - v) / 0.5
            v = v + DT * (drive + rep)
            p = p + DT * v
            traj.append(p)
        scenes.append((pos, vel, goal, torch.stack(traj, dim=1)))
    return scenes


scenes = observed_tracks(8)
model = LearnedSocialForce()
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)

for epoch in range(2):
    for pos0, vel0, goal, target in scenes:
        pred = rollout(model, pos0, vel0, goal, STEPS)
        ade = (pred - target).norm(dim=-1).mean()
        optimizer.zero_grad()
        ade.backward()
        optimizer.step()
    print(f"epoch {epoch} ADE {ade.item():.3f}")
