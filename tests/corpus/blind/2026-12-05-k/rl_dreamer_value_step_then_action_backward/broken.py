"""Dreamer (model-based RL): world model, then value and action models trained in imagination.

Reduced from https://github.com/cross32768/Dreamer_PyTorch/issues/2 (train.py of
cross32768/Dreamer_PyTorch). The author trains the world model (encoder, RSSM,
observation and reward models) on replayed sequences, then imagines trajectories
with the action model through the RSSM prior, computes lambda-returns with the
reward and value models, and updates the value model and the action model, each
with its own Adam optimizer. Vector observations stand in for the 64x64 pixels
and random episodes for the DM Control replay buffer.
"""

import numpy as np
import torch
from torch import nn
from torch.distributions import Normal
from torch.distributions.kl import kl_divergence
from torch.nn import functional as F
from torch.nn.functional import mse_loss
from torch.nn.utils import clip_grad_norm_
from torch.optim import Adam

OBS_DIM, ACTION_DIM = 12, 3
STATE_DIM, RNN_HIDDEN_DIM, HIDDEN_DIM = 6, 16, 32
BATCH_SIZE, CHUNK_LENGTH, IMAGINATION_HORIZON = 4, 6, 4
GAMMA, LAMBDA_ = 0.99, 0.95
FREE_NATS, CLIP_GRAD_NORM = 3, 100
UPDATE_STEPS = 3


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(OBS_DIM, HIDDEN_DIM)
        self.fc2 = nn.Linear(HIDDEN_DIM, HIDDEN_DIM)

    def forward(self, obs):
        return F.relu(self.fc2(F.relu(self.fc1(obs))))


class RecurrentStateSpaceModel(nn.Module):
    def __init__(self, state_dim, action_dim, rnn_hidden_dim, hidden_dim=HIDDEN_DIM, min_stddev=0.1):
        super().__init__()
        self.fc_state_action = nn.Linear(state_dim + action_dim, hidden_dim)
        self.fc_rnn_hidden = nn.Linear(rnn_hidden_dim, hidden_dim)
        self.fc_state_mean_prior = nn.Linear(hidden_dim, state_dim)
        self.fc_state_stddev_prior = nn.Linear(hidden_dim, state_dim)
        self.fc_rnn_hidden_embedded_obs = nn.Linear(rnn_hidden_dim + HIDDEN_DIM, hidden_dim)
        self.fc_state_mean_posterior = nn.Linear(hidden_dim, state_dim)
        self.fc_state_stddev_posterior = nn.Linear(hidden_dim, state_dim)
        self.rnn = nn.GRUCell(hidden_dim, rnn_hidden_dim)
        self._min_stddev = min_stddev

    def forward(self, state, action, rnn_hidden, embedded_next_obs):
        next_state_prior, rnn_hidden = self.prior(state, action, rnn_hidden)
        next_state_posterior = self.posterior(rnn_hidden, embedded_next_obs)
        return next_state_prior, next_state_posterior, rnn_hidden

    def prior(self, state, action, rnn_hidden):
        hidden = F.elu(self.fc_state_action(torch.cat([state, action], dim=1)))
        rnn_hidden = self.rnn(hidden, rnn_hidden)
        hidden = F.elu(self.fc_rnn_hidden(rnn_hidden))
        mean = self.fc_state_mean_prior(hidden)
        stddev = F.softplus(self.fc_state_stddev_prior(hidden)) + self._min_stddev
        return Normal(mean, stddev), rnn_hidden

    def posterior(self, rnn_hidden, embedded_obs):
        hidden = F.elu(self.fc_rnn_hidden_embedded_obs(torch.cat([rnn_hidden, embedded_obs], dim=1)))
        mean = self.fc_state_mean_posterior(hidden)
        stddev = F.softplus(self.fc_state_stddev_posterior(hidden)) + self._min_stddev
        return Normal(mean, stddev)


class ObservationModel(nn.Module):
    def __init__(self, state_dim, rnn_hidden_dim):
        super().__init__()
        self.fc1 = nn.Linear(state_dim + rnn_hidden_dim, HIDDEN_DIM)
        self.fc2 = nn.Linear(HIDDEN_DIM, OBS_DIM)

    def forward(self, state, rnn_hidden):
        return self.fc2(F.relu(self.fc1(torch.cat([state, rnn_hidden], dim=1))))


class RewardModel(nn.Module):
    def __init__(self, state_dim, rnn_hidden_dim, hidden_dim=HIDDEN_DIM):
        super().__init__()
        self.fc1 = nn.Linear(state_dim + rnn_hidden_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, hidden_dim)
        self.fc3 = nn.Linear(hidden_dim, 1)

    def forward(self, state, rnn_hidden):
        hidden = F.elu(self.fc1(torch.cat([state, rnn_hidden], dim=1)))
        hidden = F.elu(self.fc2(hidden))
        return self.fc3(hidden)


class ValueModel(nn.Module):
    def __init__(self, state_dim, rnn_hidden_dim, hidden_dim=HIDDEN_DIM):
        super().__init__()
        self.fc1 = nn.Linear(state_dim + rnn_hidden_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, hidden_dim)
        self.fc3 = nn.Linear(hidden_dim, 1)

    def forward(self, state, rnn_hidden):
        hidden = F.elu(self.fc1(torch.cat([state, rnn_hidden], dim=1)))
        hidden = F.elu(self.fc2(hidden))
        return self.fc3(hidden)


class ActionModel(nn.Module):
    def __init__(self, state_dim, rnn_hidden_dim, action_dim, hidden_dim=HIDDEN_DIM,
                 min_stddev=1e-4, init_stddev=5.0):
        super().__init__()
        self.fc1 = nn.Linear(state_dim + rnn_hidden_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, hidden_dim)
        self.fc_mean = nn.Linear(hidden_dim, action_dim)
        self.fc_stddev = nn.Linear(hidden_dim, action_dim)
        self.min_stddev = min_stddev
        self.init_stddev = np.log(np.exp(init_stddev) - 1)

    def forward(self, state, rnn_hidden):
        hidden = F.elu(self.fc1(torch.cat([state, rnn_hidden], dim=1)))
        hidden = F.elu(self.fc2(hidden))
        mean = self.fc_mean(hidden)
        mean = 5.0 * torch.tanh(mean / 5.0)
        stddev = F.softplus(self.fc_stddev(hidden) + self.init_stddev) + self.min_stddev
        return torch.tanh(Normal(mean, stddev).rsample())


def lambda_target(rewards, values, gamma, lambda_):
    V_lambda = torch.zeros_like(rewards)
    H = rewards.shape[0] - 1
    V_n = torch.zeros_like(rewards)
    V_n[H] = values[H]
    for n in range(1, H + 1):
        V_n[:-n] = (gamma ** n) * values[n:]
        for k in range(1, n + 1):
            if k == n:
                V_n[:-n] += (gamma ** (n - 1)) * rewards[k:]
            else:
                V_n[:-n] += (gamma ** (k - 1)) * rewards[k:-n + k]
        if n == H:
            V_lambda += (lambda_ ** (H - 1)) * V_n
        else:
            V_lambda += (1 - lambda_) * (lambda_ ** (n - 1)) * V_n
    return V_lambda


class ReplayBuffer:
    def __init__(self, n_episodes=8, episode_length=20):
        rng = np.random.RandomState(0)
        self.observations = rng.randn(n_episodes, episode_length, OBS_DIM).astype(np.float32)
        self.actions = rng.uniform(-1, 1, (n_episodes, episode_length, ACTION_DIM)).astype(np.float32)
        self.rewards = rng.randn(n_episodes, episode_length, 1).astype(np.float32)
        self.rng = rng

    def sample(self, batch_size, chunk_length):
        episodes = self.rng.randint(0, self.observations.shape[0], batch_size)
        starts = self.rng.randint(0, self.observations.shape[1] - chunk_length, batch_size)
        idx = [np.arange(s, s + chunk_length) for s in starts]
        obs = np.stack([self.observations[e, i] for e, i in zip(episodes, idx)])
        act = np.stack([self.actions[e, i] for e, i in zip(episodes, idx)])
        rew = np.stack([self.rewards[e, i] for e, i in zip(episodes, idx)])
        return obs, act, rew


def main():
    np.random.seed(0)
    torch.manual_seed(0)
    replay_buffer = ReplayBuffer()

    encoder = Encoder()
    rssm = RecurrentStateSpaceModel(STATE_DIM, ACTION_DIM, RNN_HIDDEN_DIM)
    obs_model = ObservationModel(STATE_DIM, RNN_HIDDEN_DIM)
    reward_model = RewardModel(STATE_DIM, RNN_HIDDEN_DIM)
    model_params = (list(encoder.parameters()) + list(rssm.parameters())
                    + list(obs_model.parameters()) + list(reward_model.parameters()))
    model_optimizer = Adam(model_params, lr=6e-4, eps=1e-4)

    value_model = ValueModel(STATE_DIM, RNN_HIDDEN_DIM)
    action_model = ActionModel(STATE_DIM, RNN_HIDDEN_DIM, ACTION_DIM)
    value_optimizer = Adam(value_model.parameters(), lr=8e-5, eps=1e-4)
    action_optimizer = Adam(action_model.parameters(), lr=8e-5, eps=1e-4)

    for update_step in range(UPDATE_STEPS):
        # update model (encoder, rssm, obs_model, reward_model)
        observations, actions, rewards = replay_buffer.sample(BATCH_SIZE, CHUNK_LENGTH)
        observations = torch.as_tensor(observations).transpose(0, 1)
        actions = torch.as_tensor(actions).transpose(0, 1)
        rewards = torch.as_tensor(rewards).transpose(0, 1)

        embedded_observations = encoder(observations.reshape(-1, OBS_DIM)).view(CHUNK_LENGTH, BATCH_SIZE, -1)

        states = torch.zeros(CHUNK_LENGTH, BATCH_SIZE, STATE_DIM)
        rnn_hiddens = torch.zeros(CHUNK_LENGTH, BATCH_SIZE, RNN_HIDDEN_DIM)
        state = torch.zeros(BATCH_SIZE, STATE_DIM)
        rnn_hidden = torch.zeros(BATCH_SIZE, RNN_HIDDEN_DIM)

        kl_loss = 0
        for t in range(CHUNK_LENGTH - 1):
            next_state_prior, next_state_posterior, rnn_hidden = \
                rssm(state, actions[t], rnn_hidden, embedded_observations[t + 1])
            state = next_state_posterior.rsample()
            states[t + 1] = state
            rnn_hiddens[t + 1] = rnn_hidden
            kl = kl_divergence(next_state_prior, next_state_posterior).sum(dim=1)
            kl_loss += kl.clamp(min=FREE_NATS).mean()
        kl_loss /= (CHUNK_LENGTH - 1)

        states = states[1:]
        rnn_hiddens = rnn_hiddens[1:]

        flatten_states = states.view(-1, STATE_DIM)
        flatten_rnn_hiddens = rnn_hiddens.view(-1, RNN_HIDDEN_DIM)
        recon_observations = obs_model(flatten_states, flatten_rnn_hiddens).view(CHUNK_LENGTH - 1, BATCH_SIZE, OBS_DIM)
        predicted_rewards = reward_model(flatten_states, flatten_rnn_hiddens).view(CHUNK_LENGTH - 1, BATCH_SIZE, 1)

        obs_loss = 0.5 * mse_loss(recon_observations, observations[1:], reduction='none').mean([0, 1]).sum()
        reward_loss = 0.5 * mse_loss(predicted_rewards, rewards[:-1])

        model_loss = kl_loss + obs_loss + reward_loss
        model_optimizer.zero_grad()
        model_loss.backward()
        clip_grad_norm_(model_params, CLIP_GRAD_NORM)
        model_optimizer.step()

        # update value_model and action_model
        # detach gradient because Dreamer doesn't update model with actor-critic loss
        flatten_states = flatten_states.detach()
        flatten_rnn_hiddens = flatten_rnn_hiddens.detach()

        imaginated_states = torch.zeros(IMAGINATION_HORIZON + 1, *flatten_states.shape)
        imaginated_rnn_hiddens = torch.zeros(IMAGINATION_HORIZON + 1, *flatten_rnn_hiddens.shape)
        imaginated_states[0] = flatten_states
        imaginated_rnn_hiddens[0] = flatten_rnn_hiddens

        for h in range(1, IMAGINATION_HORIZON + 1):
            actions = action_model(flatten_states, flatten_rnn_hiddens)
            flatten_states_prior, flatten_rnn_hiddens = rssm.prior(flatten_states, actions, flatten_rnn_hiddens)
            flatten_states = flatten_states_prior.rsample()
            imaginated_states[h] = flatten_states
            imaginated_rnn_hiddens[h] = flatten_rnn_hiddens

        flatten_imaginated_states = imaginated_states.view(-1, STATE_DIM)
        flatten_imaginated_rnn_hiddens = imaginated_rnn_hiddens.view(-1, RNN_HIDDEN_DIM)
        imaginated_rewards = reward_model(flatten_imaginated_states,
                                          flatten_imaginated_rnn_hiddens).view(IMAGINATION_HORIZON + 1, -1)
        imaginated_values = value_model(flatten_imaginated_states,
                                        flatten_imaginated_rnn_hiddens).view(IMAGINATION_HORIZON + 1, -1)
        lambda_target_values = lambda_target(imaginated_rewards, imaginated_values, GAMMA, LAMBDA_)

        # update_value model
        value_loss = 0.5 * mse_loss(imaginated_values, lambda_target_values.detach())
        value_optimizer.zero_grad()
        value_loss.backward(retain_graph=True)
        clip_grad_norm_(value_model.parameters(), CLIP_GRAD_NORM)
        value_optimizer.step()

        # update action model (multiply -1 for gradient ascent)
        action_loss = -1 * (lambda_target_values.mean())
        action_optimizer.zero_grad()
        action_loss.backward()
        clip_grad_norm_(action_model.parameters(), CLIP_GRAD_NORM)
        action_optimizer.step()

        print('update_step: %3d model loss: %.5f, value_loss: %.5f action_loss: %.5f'
              % (update_step + 1, model_loss.item(), value_loss.item(), action_loss.item()))


if __name__ == '__main__':
    main()
