"""RL: REINFORCE with a running baseline on a toy corridor; log-probs and rewards kept on the policy, cleared per episode."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

LENGTH, MAX_STEPS, GAMMA = 6, 10, 0.95


class Corridor:
    """Walk left or right along a corridor; reward 1 at the right end, a small cost per step."""

    def reset(self):
        self.pos = 0
        return self.observe()

    def observe(self):
        return F.one_hot(torch.tensor(self.pos), LENGTH).float()

    def step(self, action):
        self.pos = max(0, min(LENGTH - 1, self.pos + (1 if action == 1 else -1)))
        done = self.pos == LENGTH - 1
        return self.observe(), (1.0 if done else -0.05), done


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(LENGTH, 16)
        self.out = nn.Linear(16, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, obs):
        h = F.relu(self.fc(obs))
        return F.softmax(self.out(h), dim=-1)


def select_action(policy, obs):
    probs = policy(obs)
    action = torch.multinomial(probs, 1).item()
    policy.saved_log_probs.append(torch.log(probs[action]))
    return action


def finish_episode(policy, optimizer, baseline):
    returns, g = [], 0.0
    for r in reversed(policy.rewards):
        g = r + GAMMA * g
        returns.insert(0, g)
    returns = torch.tensor(returns)
    policy_loss = torch.stack([-lp * (ret - baseline) for lp, ret in zip(policy.saved_log_probs, returns)]).sum()
    optimizer.zero_grad()
    policy_loss.backward()
    optimizer.step()
    del policy.saved_log_probs[:]
    del policy.rewards[:]
    return returns[0].item()


def main():
    env, policy = Corridor(), Policy()
    optimizer = torch.optim.Adam(policy.parameters(), lr=2e-2)
    baseline = 0.0
    for episode in range(8):
        obs = env.reset()
        for _ in range(MAX_STEPS):
            action = select_action(policy, obs)
            obs, reward, done = env.step(action)
            policy.rewards.append(reward)
            if done:
                break
        ret = finish_episode(policy, optimizer, baseline)
        baseline = 0.9 * baseline + 0.1 * ret
        if episode % 4 == 3:
            print(f"episode {episode}: return {ret:.3f}")


if __name__ == "__main__":
    main()
