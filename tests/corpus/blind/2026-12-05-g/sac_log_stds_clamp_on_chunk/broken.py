"""Reduced from https://github.com/toshikwa/gail-airl-ppo.pytorch/issues/13

The author was training the SAC expert of gail-airl-ppo (train_expert.py: a SAC agent with a
state-dependent Gaussian policy, twin critics and a soft-updated target critic, on a MuJoCo
continuous-control task). The first actor update raised "Output 1 of SplitBackward0 is a view and
is being modified inplace. This view is the output of a function that returns multiple views." at
`log_stds.clamp_(-20, 2)` in StateDependentPolicy.sample: the policy network's output is split with
`.chunk(2, dim=-1)` and the second half is clamped in place. Replacing `clamp_` by `clamp` made it
run. (Under `torch.no_grad()`, in explore() and in the critic's target, the same line passes: the
error appears only in the actor's update.)

Here: the same agent and update order on a small synthetic 2-D reaching task (a point mass pushed
towards a goal), seeded, on CPU.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def build_mlp(input_dim, output_dim, hidden_units=(64, 64), hidden_activation=None):
    hidden_activation = hidden_activation or nn.ReLU()
    layers = []
    units = input_dim
    for next_units in hidden_units:
        layers.append(nn.Linear(units, next_units))
        layers.append(hidden_activation)
        units = next_units
    layers.append(nn.Linear(units, output_dim))
    return nn.Sequential(*layers)


def calculate_log_pi(log_stds, noises, actions):
    gaussian_log_probs = (-0.5 * noises.pow(2) - log_stds).sum(dim=-1, keepdim=True) \
        - 0.5 * math.log(2 * math.pi) * log_stds.size(-1)
    return gaussian_log_probs - torch.log(1 - actions.pow(2) + 1e-6).sum(dim=-1, keepdim=True)


def reparameterize(means, log_stds):
    noises = torch.randn_like(means)
    us = means + noises * log_stds.exp()
    actions = torch.tanh(us)
    return actions, calculate_log_pi(log_stds, noises, actions)


class StateDependentPolicy(nn.Module):

    def __init__(self, state_shape, action_shape, hidden_units=(64, 64),
                 hidden_activation=None):
        super().__init__()
        hidden_activation = hidden_activation or nn.ReLU(inplace=True)
        self.net = build_mlp(state_shape[0], 2 * action_shape[0], hidden_units, hidden_activation)

    def forward(self, states):
        return torch.tanh(self.net(states).chunk(2, dim=-1)[0])

    def sample(self, states):
        means, log_stds = self.net(states).chunk(2, dim=-1)
        return reparameterize(means, log_stds.clamp_(-20, 2))


class TwinnedStateActionFunction(nn.Module):

    def __init__(self, state_shape, action_shape, hidden_units=(64, 64),
                 hidden_activation=None):
        super().__init__()
        hidden_activation = hidden_activation or nn.ReLU(inplace=True)
        self.net1 = build_mlp(state_shape[0] + action_shape[0], 1, hidden_units, hidden_activation)
        self.net2 = build_mlp(state_shape[0] + action_shape[0], 1, hidden_units, hidden_activation)

    def forward(self, states, actions):
        xs = torch.cat([states, actions], dim=-1)
        return self.net1(xs), self.net2(xs)


class ReachEnv:
    """A point mass on the plane; the action pushes it, the reward is minus the distance to the goal."""

    def reset(self):
        self.pos = torch.rand(2) * 2 - 1
        self.goal = torch.rand(2) * 2 - 1
        self.t = 0
        return torch.cat([self.pos, self.goal])

    def step(self, action):
        self.pos = (self.pos + 0.1 * action).clamp(-1.5, 1.5)
        self.t += 1
        reward = -float((self.pos - self.goal).norm())
        done = self.t >= 50
        return torch.cat([self.pos, self.goal]), reward, done


class Buffer:

    def __init__(self, buffer_size, state_shape, action_shape):
        self._n = 0
        self._p = 0
        self.buffer_size = buffer_size
        self.states = torch.empty((buffer_size, *state_shape))
        self.actions = torch.empty((buffer_size, *action_shape))
        self.rewards = torch.empty((buffer_size, 1))
        self.dones = torch.empty((buffer_size, 1))
        self.next_states = torch.empty((buffer_size, *state_shape))

    def append(self, state, action, reward, done, next_state):
        self.states[self._p] = state
        self.actions[self._p] = action
        self.rewards[self._p] = float(reward)
        self.dones[self._p] = float(done)
        self.next_states[self._p] = next_state
        self._p = (self._p + 1) % self.buffer_size
        self._n = min(self._n + 1, self.buffer_size)

    def sample(self, batch_size):
        idxes = torch.randint(0, self._n, (batch_size,))
        return (self.states[idxes], self.actions[idxes], self.rewards[idxes],
                self.dones[idxes], self.next_states[idxes])


class SAC:

    def __init__(self, state_shape, action_shape, batch_size=64, gamma=0.99, lr_actor=3e-4,
                 lr_critic=3e-4, buffer_size=10000, start_steps=64, tau=5e-3, alpha=0.2):
        self.buffer = Buffer(buffer_size, state_shape, action_shape)
        self.actor = StateDependentPolicy(state_shape, action_shape)
        self.critic = TwinnedStateActionFunction(state_shape, action_shape)
        self.critic_target = TwinnedStateActionFunction(state_shape, action_shape)
        self.critic_target.load_state_dict(self.critic.state_dict())
        for param in self.critic_target.parameters():
            param.requires_grad = False
        self.optim_actor = torch.optim.Adam(self.actor.parameters(), lr=lr_actor)
        self.optim_critic = torch.optim.Adam(self.critic.parameters(), lr=lr_critic)
        self.batch_size = batch_size
        self.start_steps = start_steps
        self.gamma = gamma
        self.tau = tau
        self.alpha = alpha
        self.learning_steps = 0

    def is_update(self, steps):
        return steps >= max(self.start_steps, self.batch_size)

    def explore(self, state):
        with torch.no_grad():
            action, _ = self.actor.sample(state.unsqueeze(0))
        return action[0]

    def step(self, env, state, t, steps):
        t += 1
        action = torch.rand(2) * 2 - 1 if steps <= self.start_steps else self.explore(state)
        next_state, reward, done = env.step(action)
        self.buffer.append(state, action, reward, done, next_state)
        if done:
            t = 0
            next_state = env.reset()
        return next_state, t

    def update(self):
        self.learning_steps += 1
        states, actions, rewards, dones, next_states = self.buffer.sample(self.batch_size)
        self.update_critic(states, actions, rewards, dones, next_states)
        self.update_actor(states)
        self.update_target()

    def update_critic(self, states, actions, rewards, dones, next_states):
        curr_qs1, curr_qs2 = self.critic(states, actions)
        with torch.no_grad():
            next_actions, log_pis = self.actor.sample(next_states)
            next_qs1, next_qs2 = self.critic_target(next_states, next_actions)
            next_qs = torch.min(next_qs1, next_qs2) - self.alpha * log_pis
        target_qs = rewards + (1.0 - dones) * self.gamma * next_qs
        loss_critic1 = (curr_qs1 - target_qs).pow_(2).mean()
        loss_critic2 = (curr_qs2 - target_qs).pow_(2).mean()
        self.optim_critic.zero_grad()
        (loss_critic1 + loss_critic2).backward(retain_graph=False)
        self.optim_critic.step()

    def update_actor(self, states):
        actions, log_pis = self.actor.sample(states)
        qs1, qs2 = self.critic(states, actions)
        loss_actor = self.alpha * log_pis.mean() - torch.min(qs1, qs2).mean()
        self.optim_actor.zero_grad()
        loss_actor.backward(retain_graph=False)
        self.optim_actor.step()

    def update_target(self):
        with torch.no_grad():
            for t, s in zip(self.critic_target.parameters(), self.critic.parameters()):
                t.data.mul_(1.0 - self.tau)
                t.data.add_(self.tau * s.data)


class Trainer:

    def __init__(self, env, algo, num_steps=200):
        self.env = env
        self.algo = algo
        self.num_steps = num_steps

    def train(self):
        t = 0
        state = self.env.reset()
        for steps in range(1, self.num_steps + 1):
            state, t = self.algo.step(self.env, state, t, steps)
            if self.algo.is_update(steps):
                self.algo.update()
            if steps % 50 == 0:
                print(f"step {steps}: learning steps {self.algo.learning_steps}")


if __name__ == "__main__":
    env = ReachEnv()
    algo = SAC(state_shape=(4,), action_shape=(2,))
    trainer = Trainer(env, algo)
    trainer.train()
