"""Soft actor-critic driver for a kart-racing game bot: the critic is stepped before the actor's loss is backwarded.

Source: pytorch/pytorch issue #38480, "RuntimeError: one of the variables needed for
gradient computation has been modified by an inplace operation"
(https://github.com/pytorch/pytorch/issues/38480).

The report's author trains a Soft Actor-Critic agent (`sac_train(max_steps)`: episodes, a
replay `memory`, `agent.update_parameters(memory, batch_size, updates)` once the buffer is
big enough) and, after upgrading PyTorch, gets "one of the variables needed for gradient
computation has been modified by an inplace operation: [torch.FloatTensor [256, 1]], which
is output 0 of TBackward, is at version 3; expected version 2". The tensor is the transposed
weight of the critic's last Linear layer: the update computes the critic loss and the
policy loss from one forward pass, backwards and *steps* the critic, and only then
backwards the policy loss, whose graph still holds the critic weights the step has just
overwritten in place. PyTorch >= 1.5 checks this, older versions silently used the new
weights. The fix that the SAC ports adopted (and the one the author evidently wanted: each
network trained on its own loss, as in the paper) is to compute the policy loss after the
critic update, on a fresh forward through the updated critic.

Reduction: a kart on a synthetic track (ray distances + speed -> steer/throttle), a
replay buffer filled from seeded random transitions, twin-Q critic and tanh-Gaussian
policy as in the usual SAC code, fixed entropy temperature. `SACAgent.update_parameters`
keeps the report's order: both losses first, then critic step, then policy backward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

HPARAMS = {
    "obs_dim": 10,          # 8 track rays + speed + heading error
    "act_dim": 2,           # steer, throttle
    "hidden": 32,
    "gamma": 0.99,
    "tau": 0.005,
    "alpha": 0.2,
    "lr": 3e-4,
    "batch_size": 32,
    "buffer_size": 512,
    "start_steps": 40,
    "num_episodes": 2,
    "max_steps": 30,
}


class KartTrack:
    """Tiny synthetic racing env: the kart should keep heading error near zero and speed up."""

    def __init__(self, obs_dim):
        self.obs_dim = obs_dim
        self.state = torch.zeros(obs_dim)

    def reset(self):
        self.state = torch.randn(self.obs_dim) * 0.5
        return self.state.clone()

    def step(self, action):
        steer, throttle = action[0].item(), action[1].item()
        heading_err = self.state[-1].item() - 0.3 * steer
        speed = max(0.0, self.state[-2].item() + 0.1 * throttle)
        rays = self.state[:-2] * 0.9 + 0.1 * torch.randn(self.obs_dim - 2)
        self.state = torch.cat([rays, torch.tensor([speed, heading_err])])
        reward = speed - abs(heading_err)
        done = abs(heading_err) > 3.0
        return self.state.clone(), reward, done


class ReplayMemory:
    def __init__(self, capacity):
        self.capacity = capacity
        self.buffer = []

    def push(self, s, a, r, s2, d):
        if len(self.buffer) >= self.capacity:
            self.buffer.pop(0)
        self.buffer.append((s, a, torch.tensor([r]), s2, torch.tensor([float(d)])))

    def sample(self, batch_size):
        idx = torch.randint(len(self.buffer), (batch_size,))
        batch = [self.buffer[i] for i in idx.tolist()]
        return [torch.stack(col) for col in zip(*batch)]

    def __len__(self):
        return len(self.buffer)


class QNetwork(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden):
        super().__init__()
        self.q1 = nn.Sequential(nn.Linear(obs_dim + act_dim, hidden), nn.ReLU(),
                                nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        self.q2 = nn.Sequential(nn.Linear(obs_dim + act_dim, hidden), nn.ReLU(),
                                nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, state, action):
        sa = torch.cat([state, action], dim=1)
        return self.q1(sa), self.q2(sa)


class GaussianPolicy(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU(),
                                  nn.Linear(hidden, hidden), nn.ReLU())
        self.mean = nn.Linear(hidden, act_dim)
        self.log_std = nn.Linear(hidden, act_dim)

    def sample(self, state):
        h = self.body(state)
        mean = self.mean(h)
        log_std = self.log_std(h).clamp(-20, 2)
        normal = torch.distributions.Normal(mean, log_std.exp())
        x_t = normal.rsample()
        action = torch.tanh(x_t)
        log_prob = normal.log_prob(x_t) - torch.log(1 - action.pow(2) + 1e-6)
        return action, log_prob.sum(1, keepdim=True)


class SACAgent:
    def __init__(self, hp):
        self.hp = hp
        self.critic = QNetwork(hp["obs_dim"], hp["act_dim"], hp["hidden"])
        self.critic_target = QNetwork(hp["obs_dim"], hp["act_dim"], hp["hidden"])
        self.critic_target.load_state_dict(self.critic.state_dict())
        self.policy = GaussianPolicy(hp["obs_dim"], hp["act_dim"], hp["hidden"])
        self.critic_optim = torch.optim.Adam(self.critic.parameters(), lr=hp["lr"])
        self.policy_optim = torch.optim.Adam(self.policy.parameters(), lr=hp["lr"])

    def select_action(self, state):
        with torch.no_grad():
            action, _ = self.policy.sample(state.unsqueeze(0))
        return action[0]

    def update_parameters(self, memory, batch_size, updates):
        state, action, reward, next_state, done = memory.sample(batch_size)
        alpha, gamma = self.hp["alpha"], self.hp["gamma"]

        with torch.no_grad():
            next_action, next_log_pi = self.policy.sample(next_state)
            q1_next, q2_next = self.critic_target(next_state, next_action)
            min_q_next = torch.min(q1_next, q2_next) - alpha * next_log_pi
            target_q = reward + (1 - done) * gamma * min_q_next

        q1, q2 = self.critic(state, action)
        critic_loss = F.mse_loss(q1, target_q) + F.mse_loss(q2, target_q)

        pi, log_pi = self.policy.sample(state)
        q1_pi, q2_pi = self.critic(state, pi)
        policy_loss = (alpha * log_pi - torch.min(q1_pi, q2_pi)).mean()

        self.critic_optim.zero_grad()
        critic_loss.backward()
        self.critic_optim.step()

        self.policy_optim.zero_grad()
        policy_loss.backward()
        self.policy_optim.step()

        with torch.no_grad():
            for tp, p in zip(self.critic_target.parameters(), self.critic.parameters()):
                tp.mul_(1 - self.hp["tau"]).add_(self.hp["tau"] * p)
        return critic_loss.item(), policy_loss.item()


def sac_train(hp):
    env = KartTrack(hp["obs_dim"])
    agent = SACAgent(hp)
    memory = ReplayMemory(hp["buffer_size"])
    total_numsteps, updates = 0, 0
    for i_episode in range(hp["num_episodes"]):
        state = env.reset()
        episode_reward = 0.0
        for step in range(hp["max_steps"]):
            if hp["start_steps"] > total_numsteps:
                action = torch.rand(hp["act_dim"]) * 2 - 1
            else:
                action = agent.select_action(state)
            if len(memory) > hp["batch_size"]:
                c_loss, p_loss = agent.update_parameters(memory, hp["batch_size"], updates)
                updates += 1
            next_state, reward, done = env.step(action)
            memory.push(state, action, reward, next_state, done)
            state = next_state
            episode_reward += reward
            total_numsteps += 1
            if done:
                break
        print(f"episode {i_episode} steps {total_numsteps} reward {episode_reward:.2f} updates {updates}")


def main():
    sac_train(HPARAMS)


if __name__ == "__main__":
    main()
