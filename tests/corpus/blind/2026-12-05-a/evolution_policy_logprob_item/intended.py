"""A self-organising network whose structure is mutated by a learned policy (REINFORCE) during training.

Source: https://github.com/coleam00/Archon/pull/821
"Implement ESOWN v2 folder structure with all critical fixes" (review of trainer.py).
The author trained an evolving network: every few steps a policy network picks a structural
mutation (here: which hidden-unit group to switch), is rewarded by the change in training loss,
and is updated with a REINFORCE loss. Reduced: a 2-layer MLP backbone with four unit groups.
Corrected as the review proposes: the policy's log-probability is computed with grad (no
torch.no_grad() around the evolution step) and returned as a tensor; only the reward is a constant.
"""

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class TrainConfig:
    in_dim: int = 10
    hidden: int = 32
    groups: int = 4
    classes: int = 3
    lr: float = 1e-2
    policy_lr: float = 1e-2
    policy_freq: int = 2
    epsilon: float = 0.1
    steps: int = 12


class EvolutionPolicy(nn.Module):
    def __init__(self, groups):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 + groups, 16), nn.Tanh(), nn.Linear(16, groups))

    def forward(self, state):
        return self.net(state)


class ESOWN(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.groups = cfg.groups
        self.backbone = nn.ModuleDict(
            {"fc1": nn.Linear(cfg.in_dim, cfg.hidden), "fc2": nn.Linear(cfg.hidden, cfg.classes)}
        )
        self.register_buffer("group_mask", torch.ones(cfg.groups))
        self.evo_policy = EvolutionPolicy(cfg.groups)
        self.last_loss = None

    def forward(self, x):
        h = F.relu(self.backbone["fc1"](x))
        mask = self.group_mask.repeat_interleave(h.size(1) // self.groups)
        return self.backbone["fc2"](h * mask)

    def evolve_with_policy(self, loss_value, epsilon):
        state = torch.cat([torch.tensor([loss_value, epsilon]), self.group_mask])
        logits = self.evo_policy(state)
        dist = torch.distributions.Categorical(logits=logits)
        action = dist.sample()
        log_prob = dist.log_prob(action)
        # mutate: switch the chosen unit group on or off
        self.group_mask[action] = 1.0 - self.group_mask[action]
        reward = 0.0 if self.last_loss is None else self.last_loss - loss_value
        self.last_loss = loss_value
        return {"total_reward": reward, "log_prob": log_prob, "action": action.item()}


class Trainer:
    def __init__(self, model, optimizer, policy_optimizer, cfg):
        self.model = model
        self.optimizer = optimizer
        self.policy_optimizer = policy_optimizer
        self.policy_freq = cfg.policy_freq
        self.epsilon = cfg.epsilon
        self.device = torch.device("cpu")
        self.global_step = 0

    def train_step(self, x, y):
        logits = self.model(x)
        loss = F.cross_entropy(logits, y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.global_step += 1

        if self.global_step % self.policy_freq == 0:
            epsilon = self.epsilon
            evo_stats = self.model.evolve_with_policy(loss.item(), epsilon)

            # Update policy
            reward = torch.tensor(evo_stats["total_reward"], device=self.device)
            log_prob = evo_stats["log_prob"]

            policy_loss = -(log_prob * reward)
            self.policy_optimizer.zero_grad()
            policy_loss.backward()
            self.policy_optimizer.step()
        return loss.item()


def main(cfg):
    torch.manual_seed(0)
    x = torch.randn(64, cfg.in_dim)
    y = torch.randint(0, cfg.classes, (64,))
    model = ESOWN(cfg)
    policy_net = model.evo_policy
    optimizer = torch.optim.Adam(model.backbone.parameters(), lr=cfg.lr)
    policy_optimizer = torch.optim.Adam(policy_net.parameters(), lr=cfg.policy_lr)
    trainer = Trainer(model, optimizer, policy_optimizer, cfg)
    for step in range(cfg.steps):
        idx = torch.randint(0, 64, (16,))
        print(step, trainer.train_step(x[idx], y[idx]))


if __name__ == "__main__":
    main(TrainConfig())
