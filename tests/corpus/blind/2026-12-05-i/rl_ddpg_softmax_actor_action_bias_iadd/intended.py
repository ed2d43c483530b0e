"""DDPG (tianshou 0.2 layout) whose actor ends in a softmax, trained on a toy continuous-control task.

Source: https://github.com/thu-ml/tianshou/issues/29

The author uses tianshou's ``DDPGPolicy`` (actor, critic, their target copies and one Adam each)
with the test suite's actor network, to which they added a softmax over the action dimensions.
The policy's ``forward`` shifts the actor's output by the action range's centre and, when
exploring, adds Gaussian noise, then clamps it to the range; ``learn`` updates the critic on the
TD target, then the actor on ``-critic(obs, actor(obs))``, then soft-updates the targets.
"""

from copy import deepcopy
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

STATE_DIM, ACTION_DIM = 6, 3


class Batch(SimpleNamespace):
    pass


class Actor(nn.Module):
    def __init__(self, layer_num, state_shape, action_shape):
        super().__init__()
        layers = [nn.Linear(state_shape, 64), nn.ReLU()]
        for _ in range(layer_num):
            layers += [nn.Linear(64, 64), nn.ReLU()]
        layers += [nn.Linear(64, action_shape)]
        self.model = nn.Sequential(*layers)

    def forward(self, s, state=None, info=None):
        score = self.model(s)
        score_norm = F.softmax(score, dim=-1)
        return score_norm, None


class Critic(nn.Module):
    def __init__(self, layer_num, state_shape, action_shape):
        super().__init__()
        layers = [nn.Linear(state_shape + action_shape, 64), nn.ReLU()]
        for _ in range(layer_num):
            layers += [nn.Linear(64, 64), nn.ReLU()]
        layers += [nn.Linear(64, 1)]
        self.model = nn.Sequential(*layers)

    def forward(self, s, a):
        return self.model(torch.cat([s, a], dim=1))


class DDPGPolicy(nn.Module):
    def __init__(self, actor, actor_optim, critic, critic_optim, action_range,
                 tau=0.005, gamma=0.99, exploration_noise=0.1):
        super().__init__()
        self.actor, self.actor_old = actor, deepcopy(actor)
        self.actor_old.eval()
        self.actor_optim = actor_optim
        self.critic, self.critic_old = critic, deepcopy(critic)
        self.critic_old.eval()
        self.critic_optim = critic_optim
        self._tau, self._gamma, self._eps = tau, gamma, exploration_noise
        self._range = action_range
        self._action_bias = (action_range[0] + action_range[1]) / 2

    def sync_weight(self):
        for o, n in zip(self.actor_old.parameters(), self.actor.parameters()):
            o.data.copy_(o.data * (1 - self._tau) + n.data * self._tau)
        for o, n in zip(self.critic_old.parameters(), self.critic.parameters()):
            o.data.copy_(o.data * (1 - self._tau) + n.data * self._tau)

    def forward(self, batch, state=None, model="actor", input="obs", eps=None):
        model = getattr(self, model)
        obs = getattr(batch, input)
        logits, h = model(obs, state=state)
        logits = logits + self._action_bias
        if eps is None:
            eps = self._eps
        if eps > 0:
            logits += torch.randn(size=logits.shape) * eps
        logits = logits.clamp(self._range[0], self._range[1])
        return Batch(act=logits, state=h)

    def learn(self, batch):
        with torch.no_grad():
            target_q = self.critic_old(batch.obs_next, self(batch, model="actor_old", input="obs_next", eps=0).act)
            target_q = batch.rew[:, None] + (1.0 - batch.done[:, None]) * self._gamma * target_q
        current_q = self.critic(batch.obs, batch.act)
        critic_loss = F.mse_loss(current_q, target_q)
        self.critic_optim.zero_grad()
        critic_loss.backward()
        self.critic_optim.step()
        actor_loss = -self.critic(batch.obs, self(batch, eps=0).act).mean()
        self.actor_optim.zero_grad()
        actor_loss.backward()
        self.actor_optim.step()
        self.sync_weight()
        return {"loss/actor": actor_loss.item(), "loss/critic": critic_loss.item()}


class ToyEnv:
    """Reward for putting the action's mass on the dimension the state points at."""

    def __init__(self):
        self.obs = torch.randn(STATE_DIM)

    def step(self, act):
        target = self.obs[:ACTION_DIM].softmax(0)
        rew = -float(((act - target) ** 2).sum())
        self.obs = torch.randn(STATE_DIM)
        return self.obs.clone(), rew, False


class ReplayBuffer:
    def __init__(self):
        self.data = []

    def add(self, obs, act, rew, done, obs_next):
        self.data.append((obs, act, rew, done, obs_next))

    def sample(self, batch_size):
        idx = torch.randint(len(self.data), (batch_size,))
        obs, act, rew, done, obs_next = zip(*[self.data[i] for i in idx])
        return Batch(obs=torch.stack(obs), act=torch.stack(act), rew=torch.tensor(rew),
                     done=torch.tensor(done, dtype=torch.float32), obs_next=torch.stack(obs_next))


def collect(policy, env, buffer, n_step):
    for _ in range(n_step):
        obs = env.obs.clone()
        with torch.no_grad():
            act = policy(Batch(obs=obs[None]), eps=policy._eps).act[0]
        obs_next, rew, done = env.step(act)
        buffer.add(obs, act, rew, done, obs_next)


actor = Actor(1, STATE_DIM, ACTION_DIM)
actor_optim = torch.optim.Adam(actor.parameters(), lr=1e-4)
critic = Critic(1, STATE_DIM, ACTION_DIM)
critic_optim = torch.optim.Adam(critic.parameters(), lr=1e-3)
policy = DDPGPolicy(actor, actor_optim, critic, critic_optim, action_range=(-1.0, 1.0))

env, buffer = ToyEnv(), ReplayBuffer()
collect(policy, env, buffer, n_step=32)
for epoch in range(5):
    collect(policy, env, buffer, n_step=8)
    losses = policy.learn(buffer.sample(16))
    print(epoch, losses)
