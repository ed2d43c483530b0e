"""REINFORCE with a learned baseline on a bandit of delivery routes: the episode loop trains the baseline on each
reward and steps it, forms the advantage from the baseline's prediction, and hands the per-step terms to a
function that updates the route policy."""

import torch
import torch.nn as nn

torch.manual_seed(12)
ROUTES, FEATS = 4, 5


def reinforce_update(optim, terms):
    actor_loss = -torch.stack(terms).sum()
    optim.zero_grad()
    actor_loss.backward()
    optim.step()
    return actor_loss.item()


def train(episodes=3, steps=4):
    router = nn.Sequential(nn.Linear(FEATS, 16), nn.ReLU(), nn.Linear(16, ROUTES))
    baseline = nn.Linear(FEATS, 1)
    router_opt = torch.optim.Adam(router.parameters(), lr=1e-2)
    base_opt = torch.optim.SGD(baseline.parameters(), lr=5e-2)
    for ep in range(episodes):
        terms = []
        for t in range(steps):
            state = torch.randn(FEATS)
            dist = torch.distributions.Categorical(logits=router(state))
            route = dist.sample()
            reward = torch.tanh(state[route % FEATS])
            expected = baseline(state).squeeze()
            fit = (expected - reward) ** 2
            base_opt.zero_grad()
            fit.backward()
            base_opt.step()
            adv = (reward - expected).detach()
            terms.append(dist.log_prob(route) * adv)
        print(ep, round(reinforce_update(router_opt, terms), 4))


train()
