"""Actor-critic on an episodic task, with separate policy and critic networks (SLM-Lab layout).

Reduced from https://github.com/kengz/SLM-Lab/pull/133. The agent's body collects per
step the policy's log-probabilities and entropies while acting; at the end of each
episode the algorithm computes discounted returns and advantages from the critic, a
policy loss (advantage-weighted log-probabilities plus an entropy bonus) trained with the
policy net's optimizer and a value loss trained with the critic's optimizer. A small
random-walk environment stands in for CartPole.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)

STATE_DIM, N_ACTIONS = 4, 2


class RandomWalkEnv:
    def __init__(self, max_steps=8):
        self.max_steps = max_steps

    def reset(self):
        self.t = 0
        self.state = np.random.randn(STATE_DIM).astype(np.float32)
        return self.state

    def step(self, action):
        self.t += 1
        self.state = (self.state + (0.5 if action == 1 else -0.5) + 0.1 * np.random.randn(STATE_DIM)).astype(np.float32)
        reward = float(-abs(self.state[0]))
        return self.state, reward, self.t >= self.max_steps


class MLPNet(nn.Module):
    def __init__(self, in_dim, out_dim, hid=32):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(in_dim, hid), nn.SELU(), nn.Linear(hid, out_dim))

    def forward(self, x):
        return self.model(x)


class Body:
    def __init__(self):
        self.log_probs = []
        self.entropies = []


class ActorCritic:
    def __init__(self, gamma=0.99, entropy_coef=0.01, val_loss_coef=1.0):
        self.gamma = gamma
        self.entropy_coef = entropy_coef
        self.val_loss_coef = val_loss_coef
        self.body = Body()
        self.net = MLPNet(STATE_DIM, N_ACTIONS)
        self.critic = MLPNet(STATE_DIM, 1)
        self.optim = torch.optim.Adam(self.net.parameters(), lr=0.01)
        self.critic_optim = torch.optim.Adam(self.critic.parameters(), lr=0.01)
        self.memory = {"states": [], "rewards": []}

    def act(self, state):
        state = torch.from_numpy(state)
        pdparam = self.net(state)
        action_pd = torch.distributions.Categorical(logits=pdparam)
        action = action_pd.sample()
        self.body.log_probs.append(action_pd.log_prob(action))
        self.body.entropies.append(action_pd.entropy())
        return action.item()

    def update_memory(self, state, reward):
        self.memory["states"].append(state)
        self.memory["rewards"].append(reward)

    def calc_returns(self):
        rets, future = [], 0.0
        for r in reversed(self.memory["rewards"]):
            future = r + self.gamma * future
            rets.insert(0, future)
        return torch.tensor(rets)

    def calc_policy_loss(self, advs):
        log_probs = torch.tensor(self.body.log_probs)
        entropies = torch.tensor(self.body.entropies)
        policy_loss = -(log_probs * advs).mean()
        policy_loss -= self.entropy_coef * entropies.mean()
        return policy_loss

    def train(self):
        states = torch.from_numpy(np.stack(self.memory["states"]))
        rets = self.calc_returns()
        v_preds = self.critic(states).squeeze(-1)
        advs = (rets - v_preds).detach()

        policy_loss = self.calc_policy_loss(advs)
        self.optim.zero_grad()
        policy_loss.backward()
        self.optim.step()

        val_loss = self.val_loss_coef * F.mse_loss(v_preds, rets)
        self.critic_optim.zero_grad()
        val_loss.backward()
        self.critic_optim.step()

        self.body.log_probs, self.body.entropies = [], []
        self.memory = {"states": [], "rewards": []}
        return policy_loss.item(), val_loss.item()


def run():
    env = RandomWalkEnv()
    agent = ActorCritic()
    for episode in range(5):
        state = env.reset()
        done = False
        while not done:
            action = agent.act(state)
            next_state, reward, done = env.step(action)
            agent.update_memory(state, reward)
            state = next_state
        policy_loss, val_loss = agent.train()
        print(f"episode {episode}: policy_loss {policy_loss:.4f} val_loss {val_loss:.4f}")


if __name__ == "__main__":
    run()
