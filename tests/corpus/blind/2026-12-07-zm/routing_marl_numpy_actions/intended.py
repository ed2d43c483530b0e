"""Multi-agent packet routing: a GNN actor per router, a centralised critic, a numpy network simulator.

Report: https://github.com/parnika31/MACAAC/issues/1 ("Can't call numpy() on Variable that
requires grad. Use var.detach().numpy() instead."). Running the multi-agent actor-critic's
training script, the joint action list built from the agents' policy outputs was handed to numpy
(the log shows numpy's "Creating an ndarray from ragged nested sequences" warnings and a
Tensor coerced through ``__array__``) while those outputs still required grad, and the run stopped
at the environment step.

The training setting is the writer's: each router is an agent choosing a next hop for its queued
packets; a message-passing GNN over the topology gives every router a relaxed one-hot action
(straight-through Gumbel-softmax, as in MADDPG-style continuous relaxations). The simulator that
moves packets and returns delays is numpy code; the actor is trained through the centralised
critic, which regresses the simulator's (negative) delay.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
rng = np.random.default_rng(0)

N_ROUTERS, N_HOPS, FEAT = 8, 3, 6


class MessagePassingActor(nn.Module):
    def __init__(self, hidden=32, rounds=2):
        super().__init__()
        self.embed = nn.Linear(FEAT, hidden)
        self.msg = nn.Linear(hidden, hidden)
        self.upd = nn.GRUCell(hidden, hidden)
        self.out = nn.Linear(hidden, N_HOPS)
        self.rounds = rounds

    def forward(self, x, adj):
        h = torch.relu(self.embed(x))
        deg = adj.sum(dim=1, keepdim=True).clamp(min=1)
        for _ in range(self.rounds):
            m = adj @ torch.relu(self.msg(h)) / deg
            h = self.upd(m, h)
        return self.out(h)


class CentralCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(N_ROUTERS * (FEAT + N_HOPS), 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, x, actions):
        return self.net(torch.cat([x, actions], dim=1).flatten()).squeeze(0)


class NumpyRoutingSim:
    """Queues per router; an action is a distribution over next-hop links (one-hot in the forward)."""

    def __init__(self):
        self.link_delay = rng.uniform(1.0, 5.0, size=(N_ROUTERS, N_HOPS))
        self.queue = rng.integers(0, 10, size=N_ROUTERS).astype(np.float64)

    def observe(self):
        load = self.queue / 10.0
        feats = np.concatenate([load[:, None], self.link_delay / 5.0, rng.normal(size=(N_ROUTERS, 2))], axis=1)
        return feats.astype(np.float32)

    def step(self, joint_action):
        joint_action = np.asarray(joint_action, dtype=np.float64).reshape(N_ROUTERS, N_HOPS)
        delay = (joint_action * self.link_delay).sum(axis=1) * (1.0 + self.queue / 10.0)
        self.queue = np.maximum(0.0, self.queue - 2.0 + rng.integers(0, 4, size=N_ROUTERS))
        return -float(delay.mean())


adj = (torch.rand(N_ROUTERS, N_ROUTERS) < 0.4).float()
adj = ((adj + adj.t()) > 0).float().fill_diagonal_(0)
actor = MessagePassingActor()
critic = CentralCritic()
actor_opt = torch.optim.Adam(actor.parameters(), lr=1e-3)
critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
sim = NumpyRoutingSim()

for step in range(4):
    x = torch.from_numpy(sim.observe())
    logits = actor(x, adj)
    actions = [F.gumbel_softmax(logits[i], tau=1.0, hard=True) for i in range(N_ROUTERS)]
    reward = sim.step(np.array([a.detach().numpy() for a in actions]))

    joint = torch.stack(actions)
    critic_loss = (critic(x, joint.detach()) - reward) ** 2
    critic_opt.zero_grad()
    critic_loss.backward()
    critic_opt.step()

    actor_loss = -critic(x, joint)
    actor_opt.zero_grad()
    actor_loss.backward()
    actor_opt.step()
    print(f"step {step}: reward {reward:.3f} critic {critic_loss.item():.3f}")
