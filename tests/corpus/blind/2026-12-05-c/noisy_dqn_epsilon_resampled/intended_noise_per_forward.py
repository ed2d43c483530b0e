"""Double DQN with NoisyNet layers on a stock-trading environment ("Deep RL Hands-On", Chapter 10).

Source: https://github.com/PacktPublishing/Deep-Reinforcement-Learning-Hands-On-Second-Edition/issues/21
"Chapter 10".
The reporter replaced two linear layers of the advantage head of the chapter's SimpleFFDQN with
the chapter's NoisyLinear and training failed with "one of the variables needed for gradient
computation has been modified by an inplace operation: [torch.FloatTensor [3, 512]]". Each
forward of a NoisyLinear resamples its noise buffers in place (``epsilon_weight.normal_()``),
and ``calc_loss`` runs ``net`` twice (on the states, then on the next states to pick the double
DQN action) before the backward.
Reduced: ptan's experience source, replay buffer and target net are written out; random
transitions stand in for the stock environment; ignite's engine is a plain loop.
Corrected so that each forward keeps the noise it drew: the product saves a copy of the buffer
(``.clone()``), which the next forward's ``normal_()`` does not touch, so each forward's
gradient for ``sigma_weight`` and ``sigma_bias`` uses its own noise. (The book's Chapter 8 layer
reads the buffer through ``.data`` instead: ``intended.py``.)
"""

import copy
import math
from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

BATCH_SIZE = 32
BARS_COUNT = 10
GAMMA = 0.99
REWARD_STEPS = 2
LEARNING_RATE = 0.0001

Experience = namedtuple("Experience", ["state", "action", "reward", "last_state"])


class NoisyLinear(nn.Linear):
    def __init__(self, in_features, out_features, sigma_init=0.017, bias=True):
        super(NoisyLinear, self).__init__(in_features, out_features, bias=bias)
        self.sigma_weight = nn.Parameter(torch.full((out_features, in_features), sigma_init))
        self.register_buffer("epsilon_weight", torch.zeros(out_features, in_features))
        if bias:
            self.sigma_bias = nn.Parameter(torch.full((out_features,), sigma_init))
            self.register_buffer("epsilon_bias", torch.zeros(out_features))
        self.reset_parameters()

    def reset_parameters(self):
        std = math.sqrt(3 / self.in_features)
        self.weight.data.uniform_(-std, std)
        self.bias.data.uniform_(-std, std)

    def forward(self, input):
        self.epsilon_weight.normal_()
        bias = self.bias
        if bias is not None:
            self.epsilon_bias.normal_()
            bias = bias + self.sigma_bias * self.epsilon_bias.clone()
        return F.linear(input, self.weight + self.sigma_weight * self.epsilon_weight.clone(), bias)


class SimpleFFDQN(nn.Module):
    def __init__(self, obs_len, actions_n):
        super(SimpleFFDQN, self).__init__()

        self.fc_val = nn.Sequential(
            nn.Linear(obs_len, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 1),
        )

        self.fc_adv = nn.Sequential(
            nn.Linear(obs_len, 512),
            nn.ReLU(),
            NoisyLinear(512, 512),
            nn.ReLU(),
            NoisyLinear(512, actions_n),
        )

    def forward(self, x):
        val = self.fc_val(x)
        adv = self.fc_adv(x)
        return val + (adv - adv.mean(dim=1, keepdim=True))


class TargetNet:
    """ptan.agent.TargetNet: a copy of the model, synced from time to time."""

    def __init__(self, model):
        self.model = model
        self.target_model = copy.deepcopy(model)

    def sync(self):
        self.target_model.load_state_dict(self.model.state_dict())


def unpack_batch(batch):
    states, actions, rewards, dones, last_states = [], [], [], [], []
    for exp in batch:
        state = np.asarray(exp.state)
        states.append(state)
        actions.append(exp.action)
        rewards.append(exp.reward)
        dones.append(exp.last_state is None)
        if exp.last_state is None:
            last_states.append(state)  # the result will be masked anyway
        else:
            last_states.append(np.asarray(exp.last_state))
    return (
        np.array(states),
        np.array(actions),
        np.array(rewards, dtype=np.float32),
        np.array(dones, dtype=np.uint8),
        np.array(last_states),
    )


def calc_loss(batch, net, tgt_net, gamma, device="cpu"):
    states, actions, rewards, dones, next_states = unpack_batch(batch)

    states_v = torch.tensor(states).to(device)
    next_states_v = torch.tensor(next_states).to(device)
    actions_v = torch.tensor(actions).to(device)
    rewards_v = torch.tensor(rewards).to(device)
    done_mask = torch.BoolTensor(dones).to(device)

    state_action_values = net(states_v).gather(1, actions_v.unsqueeze(-1)).squeeze(-1)
    next_state_actions = net(next_states_v).max(1)[1]
    next_state_values = tgt_net(next_states_v).gather(1, next_state_actions.unsqueeze(-1)).squeeze(-1)
    next_state_values[done_mask] = 0.0

    expected_state_action_values = next_state_values.detach() * gamma + rewards_v
    return nn.MSELoss()(state_action_values, expected_state_action_values)


def random_experience(rng, obs_len, actions_n):
    state = rng.standard_normal(obs_len).astype(np.float32)
    last_state = None if rng.random() < 0.1 else rng.standard_normal(obs_len).astype(np.float32)
    return Experience(state, int(rng.integers(actions_n)), float(rng.standard_normal()), last_state)


if __name__ == "__main__":
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    obs_len, actions_n = 3 * BARS_COUNT + 2, 3  # StocksEnv: 3 prices per bar, position flag and profit
    buffer = [random_experience(rng, obs_len, actions_n) for _ in range(256)]

    net = SimpleFFDQN(obs_len, actions_n)
    tgt_net = TargetNet(net)
    optimizer = optim.Adam(net.parameters(), lr=LEARNING_RATE)

    for iteration in range(1, 6):
        batch = [buffer[i] for i in rng.choice(len(buffer), BATCH_SIZE, replace=False)]
        optimizer.zero_grad()
        loss_v = calc_loss(batch, net, tgt_net.target_model, gamma=GAMMA**REWARD_STEPS)
        loss_v.backward()
        optimizer.step()
        print(f"{iteration}: loss={loss_v.item():.5f}")
        if iteration % 3 == 0:
            tgt_net.sync()
