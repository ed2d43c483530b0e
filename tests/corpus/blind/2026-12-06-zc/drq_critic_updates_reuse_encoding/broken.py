"""Reinforcement learning from pixels with data augmentation: DrQ (random shifts, a critic and an actor sharing an encoder).

Source: https://github.com/karpathy/nn-zero-to-hero/issues/31 ("Trying to backward through the graph
a second time"): the reporter's forward pass (``logits = xenc @ W`` ... ``loss``) runs once, and the
backward pass and weight update are then repeated on that same ``loss``. The training setting is the
writer's.

The author trains DrQ on a replay buffer of small pixel observations. To get more out of each
sampled batch, the critic takes CRITIC_UPDATES gradient steps per batch; the augmented observations
are encoded once, before that loop, and every critic update reuses the encoding. The actor then
updates on detached features, as in DrQ.
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

OBS_SHAPE, ACTION_DIM, FEATURE_DIM = (3, 24, 24), 2, 32
BATCH, CRITIC_UPDATES, GAMMA, TAU, ALPHA = 16, 2, 0.99, 0.01, 0.1


class RandomShiftsAug(nn.Module):
    def __init__(self, pad=2):
        super().__init__()
        self.pad = pad

    def forward(self, x):
        n, _, h, w = x.shape
        x = F.pad(x, (self.pad,) * 4, mode="replicate")
        shift = torch.randint(0, 2 * self.pad + 1, (n, 2))
        return torch.stack([x[i, :, sy:sy + h, sx:sx + w] for i, (sx, sy) in enumerate(shift.tolist())])


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2), nn.ReLU(), nn.Conv2d(16, 16, 3), nn.ReLU())
        self.fc = nn.Linear(16 * 9 * 9, FEATURE_DIM)
        self.ln = nn.LayerNorm(FEATURE_DIM)

    def forward(self, obs):
        h = self.convs(obs / 255.0 - 0.5)
        return torch.tanh(self.ln(self.fc(h.flatten(1))))


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.q1 = nn.Sequential(nn.Linear(FEATURE_DIM + ACTION_DIM, 64), nn.ReLU(), nn.Linear(64, 1))
        self.q2 = nn.Sequential(nn.Linear(FEATURE_DIM + ACTION_DIM, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, feat, action):
        x = torch.cat([feat, action], -1)
        return self.q1(x), self.q2(x)


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(FEATURE_DIM, 64), nn.ReLU(), nn.Linear(64, 2 * ACTION_DIM))

    def forward(self, feat):
        mu, log_std = self.net(feat).chunk(2, -1)
        std = log_std.clamp(-5, 2).exp()
        eps = torch.randn_like(mu)
        pre = mu + std * eps
        action = torch.tanh(pre)
        log_prob = (-0.5 * eps.pow(2) - log_std.clamp(-5, 2) - 0.9189).sum(-1, keepdim=True)
        log_prob = log_prob - torch.log(1 - action.pow(2) + 1e-6).sum(-1, keepdim=True)
        return action, log_prob


def sample_batch():
    obs = torch.randint(0, 256, (BATCH, *OBS_SHAPE)).float()
    next_obs = torch.randint(0, 256, (BATCH, *OBS_SHAPE)).float()
    action = torch.rand(BATCH, ACTION_DIM) * 2 - 1
    reward = obs.mean((1, 2, 3)).unsqueeze(-1) / 255.0 - action.pow(2).sum(-1, keepdim=True) * 0.1
    return obs, action, reward, next_obs


@torch.no_grad()
def soft_update(net, target, tau=TAU):
    for p, tp in zip(net.parameters(), target.parameters()):
        tp.lerp_(p, tau)


aug = RandomShiftsAug()
encoder, critic, actor = Encoder(), Critic(), Actor()
critic_target, encoder_target = copy.deepcopy(critic), copy.deepcopy(encoder)
critic_optimizer = torch.optim.Adam([*encoder.parameters(), *critic.parameters()], lr=1e-3)
actor_optimizer = torch.optim.Adam(actor.parameters(), lr=1e-3)

for step in range(3):
    obs, action, reward, next_obs = sample_batch()
    obs_aug, next_obs_aug = aug(obs), aug(next_obs)
    with torch.no_grad():
        next_feat = encoder_target(next_obs_aug)
        next_action, next_log_prob = actor(next_feat)
        tq1, tq2 = critic_target(next_feat, next_action)
        target_q = reward + GAMMA * (torch.min(tq1, tq2) - ALPHA * next_log_prob)

    feat = encoder(obs_aug)
    for _ in range(CRITIC_UPDATES):
        q1, q2 = critic(feat, action)
        critic_loss = F.mse_loss(q1, target_q) + F.mse_loss(q2, target_q)
        critic_optimizer.zero_grad()
        critic_loss.backward()
        critic_optimizer.step()

    feat_actor = encoder(obs_aug).detach()
    pi, log_prob = actor(feat_actor)
    aq1, aq2 = critic(feat_actor, pi)
    actor_loss = (ALPHA * log_prob - torch.min(aq1, aq2)).mean()
    actor_optimizer.zero_grad()
    actor_loss.backward()
    actor_optimizer.step()

    soft_update(critic, critic_target)
    soft_update(encoder, encoder_target)
    print(f"step {step}: critic {critic_loss.item():.4f} actor {actor_loss.item():.4f}")
