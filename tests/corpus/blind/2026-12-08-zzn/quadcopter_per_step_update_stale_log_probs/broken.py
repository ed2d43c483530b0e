"""Delivery-quadcopter landing policy trained with REINFORCE with a baseline, updated per step.

Source: https://github.com/sweetice/Deep-reinforcement-learning-with-pytorch/issues/37
"bug in reinforce with baseline" (sweetice/Deep-reinforcement-learning-with-pytorch
issue #37), about `Char02 Policy Gradient/REINFORCE_with_Baseline.py` of that
repository (I read the file as it stands in the repository).

The script plays a CartPole episode with a softmax `Policy`, keeps each step's
`m.log_prob(action)` in a list, computes the returns G_t, and then updates "step by
step" as in Sutton & Barto: for every t it computes `delta = G_t - V(s_t)`, updates
the value network with `(-delta).backward(retain_graph=True)` and a fresh Adam, then
updates the policy with `(-log_act_prob[t] * delta).backward(retain_graph=True)` and
`optimizer_theta.step()`.  Commenters report that running it fails with an error
"about compute graph", and the issue points out that the value optimizer is built
over `policy.parameters()` instead of the value network's.  What fails is the
policy update of t = 1: every log-prob was computed by the episode's forward passes
before any update, so the first `optimizer_theta.step()` rewrites the policy weights
that the later log-probs saved, and their backward raises the in-place error
(`retain_graph=True` had been added to silence the freed-graph error that `delta`,
shared by both backwards, caused).  The evident intent is the textbook per-step
update: at each t, the gradient of log pi(a_t|s_t) under the current policy, with
the baseline as a constant in the policy loss and the value loss training the
value network.

Reduction: the same structure (a `Policy` module, a state-value module, episode
lists, returns, per-step value and policy updates with `retain_graph=True`, the
value optimizer created inside the loop over `policy.parameters()`), on a small
synthetic landing environment for a delivery quadcopter (altitude, vertical speed,
gust, battery; throttle up or down) driven by torch's seeded RNG instead of gym.
I give the baseline its own linear output (the repository reuses the softmax
`Policy` class with one output, which makes V constant).  The quadcopter setting is
mine.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical
from torch.nn.utils import clip_grad_norm_

HPARAMS = {
    "n_states": 4,
    "n_hidden": 32,
    "n_actions": 2,
    "alpha_theta": 1e-3,
    "alpha_w": 1e-3,
    "gamma": 0.99,
    "episodes": 5,
    "max_steps": 40,
}


class LandingEnv:
    """Quadcopter descending to a pad: keep the sink rate gentle near the ground."""

    def reset(self):
        self.alt = 8.0 + 2.0 * torch.rand(1).item()
        self.vz = 0.0
        self.battery = 1.0
        return self._obs()

    def _obs(self):
        gust = 0.2 * torch.randn(1).item()
        self.vz += gust * 0.1
        return torch.tensor([self.alt / 10.0, self.vz, gust, self.battery])

    def step(self, action):
        thrust = 0.35 if action == 1 else -0.25
        self.vz += thrust - 0.05
        self.alt += 0.5 * self.vz
        self.battery -= 0.02 if action == 1 else 0.01
        landed = self.alt <= 0.0
        crashed = landed and self.vz < -1.0
        reward = 1.0 - 0.1 * abs(self.vz)
        if crashed:
            reward = -5.0
        done = landed or self.battery <= 0.0 or self.alt > 15.0
        return self._obs(), reward, done


class Policy(nn.Module):
    def __init__(self, n_states, n_hidden, n_output):
        super().__init__()
        self.linear1 = nn.Linear(n_states, n_hidden)
        self.linear2 = nn.Linear(n_hidden, n_output)
        self.reward = []
        self.log_act_probs = []

    def forward(self, x):
        x = F.relu(self.linear1(x))
        return F.softmax(self.linear2(x), dim=1)


class StateValue(nn.Module):
    def __init__(self, n_states, n_hidden):
        super().__init__()
        self.linear1 = nn.Linear(n_states, n_hidden)
        self.linear2 = nn.Linear(n_hidden, 1)

    def forward(self, x):
        return self.linear2(F.relu(self.linear1(x)))


def loop_episode(env, policy, s_value_func, optimizer_theta, live_time):
    hp = HPARAMS
    state = env.reset()
    state_sequence = []
    log_act_prob = []
    for t in range(hp["max_steps"]):
        state = state.unsqueeze(0)
        state_sequence.append(state.clone())
        action_probs = policy(state)
        m = Categorical(action_probs)
        action = m.sample()
        log_act_prob.append(m.log_prob(action))
        next_state, re, done = env.step(action.item())
        policy.reward.append(re)
        if done:
            break
        state = next_state
    live_time.append(t)

    R = 0
    Gt = []
    for r in policy.reward[::-1]:
        R = r + hp["gamma"] * R
        Gt.insert(0, R)

    # update step by step
    for i in range(len(Gt)):
        G = Gt[i]
        V = s_value_func(state_sequence[i])
        delta = G - V

        # update value network
        optimizer_w = optim.Adam(policy.parameters(), lr=hp["alpha_w"])
        optimizer_w.zero_grad()
        policy_loss_w = -delta
        policy_loss_w.backward(retain_graph=True)
        clip_grad_norm_(policy_loss_w, 0.1)
        optimizer_w.step()

        # update policy network
        optimizer_theta.zero_grad()
        policy_loss_theta = -log_act_prob[i] * delta
        policy_loss_theta.backward(retain_graph=True)
        clip_grad_norm_(policy_loss_theta, 0.1)
        optimizer_theta.step()

    del policy.log_act_probs[:]
    del policy.reward[:]


def main():
    torch.manual_seed(1)
    hp = HPARAMS
    env = LandingEnv()
    policy = Policy(hp["n_states"], hp["n_hidden"], hp["n_actions"])
    s_value_func = StateValue(hp["n_states"], hp["n_hidden"])
    optimizer_theta = optim.Adam(policy.parameters(), lr=hp["alpha_theta"])
    live_time = []
    for i_episode in range(hp["episodes"]):
        loop_episode(env, policy, s_value_func, optimizer_theta, live_time)
        print(f"episode {i_episode} live time {live_time[-1]}")


if __name__ == "__main__":
    main()
