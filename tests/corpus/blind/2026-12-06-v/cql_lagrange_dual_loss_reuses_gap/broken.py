"""Offline RL with CQL(H), Lagrangian version: the dual loss for alpha' backwards the critics' freed graph.

Source: https://github.com/ray-project/ray/issues/16770

The reporter trained RLlib's CQL on an offline dataset and switched on
``lagrangian=True``.  With it, the conservative penalty of each twin critic is
scaled by a learned Lagrange multiplier, ``min_qf_loss = alpha_prime * (gap -
target_action_gap)``, and the multiplier's own loss is built from the same two
tensors, ``alpha_prime_loss = 0.5 * (-min_qf1_loss - min_qf2_loss)``.  The
policy code backwards and steps the two critic losses first (the first with
``retain_graph=True``, the second without), then calls
``alpha_prime_loss.backward()``, which walks back through the penalty terms
whose saved tensors the second critic backward has already freed:
"Trying to backward through the graph a second time".  This script keeps that
update order (alpha, actor, critics, then the Lagrange multiplier) on a
synthetic offline dataset of a 1-D point-mass task.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

OBS_DIM, ACT_DIM = 4, 2
N_TRANSITIONS = 512
BATCH = 64
GAMMA = 0.99
TAU = 0.005
NUM_CQL_ACTIONS = 4
CQL_TEMP = 1.0
MIN_Q_WEIGHT = 5.0
TARGET_ACTION_GAP = 1.0
TARGET_ENTROPY = -float(ACT_DIM)


def make_offline_dataset(n):
    """Transitions logged by a noisy scripted behaviour policy."""
    obs = torch.randn(n, OBS_DIM)
    behaviour = torch.tanh(-0.5 * obs[:, :ACT_DIM] + 0.3 * torch.randn(n, ACT_DIM))
    next_obs = obs.clone()
    next_obs[:, :ACT_DIM] = obs[:, :ACT_DIM] + 0.1 * behaviour
    next_obs[:, ACT_DIM:] = 0.9 * obs[:, ACT_DIM:]
    reward = -(next_obs[:, :ACT_DIM] ** 2).sum(dim=1) - 0.01 * (behaviour ** 2).sum(dim=1)
    done = (torch.rand(n) < 0.02).float()
    return obs, behaviour, reward, next_obs, done


class TanhGaussianPolicy(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(OBS_DIM, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.mean = nn.Linear(hidden, ACT_DIM)
        self.log_std = nn.Linear(hidden, ACT_DIM)

    def forward(self, obs):
        h = self.body(obs)
        mean = self.mean(h)
        log_std = self.log_std(h).clamp(-5.0, 2.0)
        std = log_std.exp()
        u = mean + std * torch.randn_like(mean)
        action = torch.tanh(u)
        logp = (-0.5 * ((u - mean) / std) ** 2 - log_std - 0.5 * math.log(2 * math.pi)).sum(dim=1)
        logp = logp - torch.log(1 - action.pow(2) + 1e-6).sum(dim=1)
        return action, logp


class QNetwork(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(OBS_DIM + ACT_DIM, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
        )

    def forward(self, obs, action):
        return self.net(torch.cat([obs, action], dim=-1)).squeeze(-1)


def q_repeat(qnet, obs, actions):
    """Q-values of NUM_CQL_ACTIONS sampled actions per state, shape (batch, NUM_CQL_ACTIONS)."""
    obs_rep = obs.unsqueeze(1).expand(-1, NUM_CQL_ACTIONS, -1).reshape(-1, OBS_DIM)
    return qnet(obs_rep, actions).view(obs.shape[0], NUM_CQL_ACTIONS)


def policy_repeat(policy, obs):
    obs_rep = obs.unsqueeze(1).expand(-1, NUM_CQL_ACTIONS, -1).reshape(-1, OBS_DIM)
    actions, logp = policy(obs_rep)
    return actions, logp.view(obs.shape[0], NUM_CQL_ACTIONS)


def conservative_gap(qnet, obs, data_actions, rand_actions, curr_actions, curr_logp, next_actions, next_logp):
    """CQL(H): logsumexp over sampled actions minus the Q-value of the dataset action."""
    random_density = math.log(0.5 ** ACT_DIM)
    cat_q = torch.cat(
        [
            q_repeat(qnet, obs, rand_actions) - random_density,
            q_repeat(qnet, obs, next_actions) - next_logp,
            q_repeat(qnet, obs, curr_actions) - curr_logp,
        ],
        dim=1,
    )
    lse = torch.logsumexp(cat_q / CQL_TEMP, dim=1).mean() * CQL_TEMP
    return MIN_Q_WEIGHT * (lse - qnet(obs, data_actions).mean())


def soft_update(target, source):
    with torch.no_grad():
        for tp, sp in zip(target.parameters(), source.parameters()):
            tp.lerp_(sp, TAU)


def main():
    obs_all, act_all, rew_all, next_all, done_all = make_offline_dataset(N_TRANSITIONS)

    actor = TanhGaussianPolicy()
    q1, q2 = QNetwork(), QNetwork()
    q1_target, q2_target = QNetwork(), QNetwork()
    q1_target.load_state_dict(q1.state_dict())
    q2_target.load_state_dict(q2.state_dict())
    log_alpha = torch.zeros(1, requires_grad=True)
    log_alpha_prime = torch.zeros(1, requires_grad=True)

    actor_opt = torch.optim.Adam(actor.parameters(), lr=3e-4)
    q1_opt = torch.optim.Adam(q1.parameters(), lr=3e-4)
    q2_opt = torch.optim.Adam(q2.parameters(), lr=3e-4)
    alpha_opt = torch.optim.Adam([log_alpha], lr=3e-4)
    alpha_prime_opt = torch.optim.Adam([log_alpha_prime], lr=3e-4)

    for it in range(30):
        idx = torch.randint(0, N_TRANSITIONS, (BATCH,))
        obs, act, rew, next_obs, done = obs_all[idx], act_all[idx], rew_all[idx], next_all[idx], done_all[idx]

        # entropy temperature
        new_act, logp = actor(obs)
        alpha_loss = -(log_alpha * (logp + TARGET_ENTROPY).detach()).mean()
        alpha_opt.zero_grad()
        alpha_loss.backward()
        alpha_opt.step()
        alpha = log_alpha.exp()

        # actor (SAC objective)
        min_q_pi = torch.min(q1(obs, new_act), q2(obs, new_act))
        actor_loss = (alpha.detach() * logp - min_q_pi).mean()
        actor_opt.zero_grad()
        actor_loss.backward()
        actor_opt.step()

        # critics: Bellman error + conservative penalty
        with torch.no_grad():
            next_act, next_logp_t = actor(next_obs)
            q_next = torch.min(q1_target(next_obs, next_act), q2_target(next_obs, next_act))
            q_target = rew + GAMMA * (1.0 - done) * (q_next - alpha * next_logp_t)
            rand_actions = torch.empty(BATCH * NUM_CQL_ACTIONS, ACT_DIM).uniform_(-1.0, 1.0)
            curr_actions, curr_logp = policy_repeat(actor, obs)
            next_actions, next_logp = policy_repeat(actor, next_obs)

        bellman_1 = F.mse_loss(q1(obs, act), q_target)
        bellman_2 = F.mse_loss(q2(obs, act), q_target)
        gap_1 = conservative_gap(q1, obs, act, rand_actions, curr_actions, curr_logp, next_actions, next_logp)
        gap_2 = conservative_gap(q2, obs, act, rand_actions, curr_actions, curr_logp, next_actions, next_logp)

        # Lagrangian CQL: alpha' scales the penalty, and is trained to keep the gap near its target
        alpha_prime = torch.clamp(log_alpha_prime.exp(), min=0.0, max=1e6)
        min_qf1_loss = alpha_prime * (gap_1 - TARGET_ACTION_GAP)
        min_qf2_loss = alpha_prime * (gap_2 - TARGET_ACTION_GAP)
        alpha_prime_loss = 0.5 * (-min_qf1_loss - min_qf2_loss)

        q1_loss = bellman_1 + min_qf1_loss
        q2_loss = bellman_2 + min_qf2_loss
        q1_opt.zero_grad()
        q1_loss.backward(retain_graph=True)
        q1_opt.step()
        q2_opt.zero_grad()
        q2_loss.backward()
        q2_opt.step()

        alpha_prime_opt.zero_grad()
        alpha_prime_loss.backward()
        alpha_prime_opt.step()

        soft_update(q1_target, q1)
        soft_update(q2_target, q2)

        if it % 10 == 0:
            print(
                f"it {it:3d} q1 {q1_loss.item():.3f} q2 {q2_loss.item():.3f} actor {actor_loss.item():.3f} "
                f"alpha {alpha.item():.3f} alpha' {alpha_prime.item():.3f}"
            )


if __name__ == "__main__":
    main()
