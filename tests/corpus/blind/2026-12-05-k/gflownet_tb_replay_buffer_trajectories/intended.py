"""GFlowNet on a hypergrid, trained with the trajectory balance loss and a replay buffer.

Reduced from https://github.com/GFNOrg/torchgfn/pull/87 (scripts/train.py of torchgfn at
that time). The author trains a forward policy (an MLP over one-hot grid positions) and
logZ with Adam (two parameter groups), sampling a batch of trajectories each iteration;
with `--replay_buffer_size > 0` the sampled trajectories are added to a replay buffer and
the training batch is sampled from it. The trajectory sampler is on-policy, so the loss
reads the log-probabilities stored in the trajectories. The backward policy is uniform.
The hypergrid, sampler, buffer and loss are written out small.
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)

NDIM, HEIGHT = 2, 4
N_ACTIONS = NDIM + 1  # move +1 along a dimension, or exit
config = {"batch_size": 8, "n_iterations": 4, "replay_buffer_size": 32, "lr": 1e-3, "lr_Z": 0.1}


def log_reward(states):
    ax = (states.float() / (HEIGHT - 1) - 0.5).abs()
    reward = 0.01 + 0.5 * ((ax > 0.25) & (ax <= 0.5)).prod(-1) + 2.0 * ((ax > 0.3) & (ax < 0.4)).prod(-1)
    return reward.log()


def forward_masks(states):
    can_move = states < HEIGHT - 1
    return torch.cat([can_move, torch.ones(states.shape[0], 1, dtype=torch.bool)], dim=-1)


class PFEstimator(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(NDIM * HEIGHT, hidden), nn.ReLU(), nn.Linear(hidden, N_ACTIONS))

    def forward(self, states):
        one_hot = nn.functional.one_hot(states, HEIGHT).float().view(states.shape[0], -1)
        logits = self.net(one_hot)
        return logits.masked_fill(~forward_masks(states), -float("inf"))


class LogZEstimator(nn.Module):
    def __init__(self):
        super().__init__()
        self.tensor = nn.Parameter(torch.tensor(0.0))


class Trajectories:
    def __init__(self, states, actions, log_probs, log_rewards):
        self.states = states          # (max_length + 1, n, NDIM), padded with the last state
        self.actions = actions        # (max_length, n), -1 after the exit action
        self.log_probs = log_probs    # (max_length, n)
        self.log_rewards = log_rewards

    def __len__(self):
        return self.actions.shape[1]

    def __getitem__(self, index):
        return Trajectories(self.states[:, index], self.actions[:, index], self.log_probs[:, index],
                            self.log_rewards[index])

    def extend(self, other):
        if len(self) == 0:
            return other
        T = max(self.actions.shape[0], other.actions.shape[0])
        a, b = self._pad(T), other._pad(T)
        return Trajectories(torch.cat([a.states, b.states], 1), torch.cat([a.actions, b.actions], 1),
                            torch.cat([a.log_probs, b.log_probs], 1), torch.cat([a.log_rewards, b.log_rewards]))

    def _pad(self, T):
        extra = T - self.actions.shape[0]
        if extra == 0:
            return self
        n = len(self)
        return Trajectories(torch.cat([self.states, self.states[-1:].expand(extra, n, NDIM)]),
                            torch.cat([self.actions, torch.full((extra, n), -1)]),
                            torch.cat([self.log_probs, torch.zeros(extra, n)]), self.log_rewards)

    def sample(self, n_trajectories):
        return self[torch.randperm(len(self))[:n_trajectories]]

    @staticmethod
    def empty():
        return Trajectories(torch.zeros(1, 0, NDIM, dtype=torch.long), torch.zeros(0, 0, dtype=torch.long),
                            torch.zeros(0, 0), torch.zeros(0))


class TrajectoriesSampler:
    def __init__(self, pf_estimator):
        self.pf_estimator = pf_estimator

    def sample(self, n_trajectories):
        states = torch.zeros(n_trajectories, NDIM, dtype=torch.long)
        done = torch.zeros(n_trajectories, dtype=torch.bool)
        all_states, all_actions, all_log_probs = [states], [], []
        while not done.all():
            logits = self.pf_estimator(states)
            dist = torch.distributions.Categorical(logits=logits)
            actions = dist.sample()
            log_probs = dist.log_prob(actions).masked_fill(done, 0.0)
            actions = actions.masked_fill(done, -1)
            exits = actions == N_ACTIONS - 1
            moves = (~done) & (~exits)
            step = nn.functional.one_hot(actions.clamp(0, NDIM - 1), NDIM) * moves.unsqueeze(-1)
            states = states + step
            done = done | exits
            all_states.append(states)
            all_actions.append(actions)
            all_log_probs.append(log_probs)
        return Trajectories(torch.stack(all_states), torch.stack(all_actions), torch.stack(all_log_probs),
                            log_reward(states))


class ReplayBuffer:
    def __init__(self, capacity):
        self.capacity = capacity
        self.training_objects = Trajectories.empty()

    def add(self, training_objects):
        self.training_objects = self.training_objects.extend(training_objects)
        self.training_objects = self.training_objects[torch.arange(len(self.training_objects))[-self.capacity:]]

    def sample(self, n_trajectories):
        return self.training_objects.sample(n_trajectories)


class TrajectoryBalance:
    def __init__(self, pf_estimator, logZ, on_policy=False, log_reward_clip_min=-12.0):
        self.pf_estimator = pf_estimator
        self.logZ = logZ
        self.on_policy = on_policy
        self.log_reward_clip_min = log_reward_clip_min

    def get_pfs_and_pbs(self, trajectories):
        valid = trajectories.actions != -1
        states = trajectories.states[:-1]
        T, n = valid.shape
        log_pf = None
        if not self.on_policy:
            logits = self.pf_estimator(states.reshape(T * n, NDIM)).log_softmax(-1).view(T, n, N_ACTIONS)
            log_pf = logits.gather(-1, trajectories.actions.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            log_pf = log_pf.masked_fill(~valid, 0.0)
        moves = valid & (trajectories.actions != N_ACTIONS - 1)
        next_states = trajectories.states[1:]
        n_parents = (next_states > 0).sum(-1).clamp(min=1)
        log_pb = (-n_parents.float().log()).masked_fill(~moves, 0.0)
        return log_pf, log_pb

    def __call__(self, trajectories):
        log_pf, log_pb = self.get_pfs_and_pbs(trajectories)
        if self.on_policy:
            log_pf = trajectories.log_probs
        log_rewards = trajectories.log_rewards.clamp_min(self.log_reward_clip_min)
        scores = log_pf.sum(0) - log_pb.sum(0) - log_rewards
        loss = (scores + self.logZ.tensor).pow(2).mean()
        if torch.isnan(loss):
            raise ValueError("loss is nan")
        return loss


def trajectories_to_training_samples(trajectories, loss_fn):
    return trajectories


if __name__ == "__main__":
    pf_estimator = PFEstimator()
    logZ = LogZEstimator()
    loss_fn = TrajectoryBalance(pf_estimator, logZ)
    optimizer = torch.optim.Adam([
        {"params": pf_estimator.parameters(), "lr": config["lr"]},
        {"params": logZ.parameters(), "lr": config["lr_Z"]},
    ])
    trajectories_sampler, on_policy = TrajectoriesSampler(pf_estimator), True
    # replayed trajectories were sampled by an older policy: re-evaluate their log-probs
    loss_fn.on_policy = on_policy and config["replay_buffer_size"] == 0

    replay_buffer = None
    if config["replay_buffer_size"] > 0:
        replay_buffer = ReplayBuffer(capacity=config["replay_buffer_size"])

    states_visited = 0
    for i in range(config["n_iterations"]):
        trajectories = trajectories_sampler.sample(n_trajectories=config["batch_size"])
        training_samples = trajectories_to_training_samples(trajectories, loss_fn)
        if replay_buffer is not None:
            with torch.no_grad():
                replay_buffer.add(training_samples)
                training_objects = replay_buffer.sample(n_trajectories=config["batch_size"])
        else:
            training_objects = training_samples

        optimizer.zero_grad()
        loss = loss_fn(training_objects)
        loss.backward()

        optimizer.step()
        states_visited += len(trajectories)
        print(f"{i}: loss {loss.item():.4f}, logZ {math.exp(logZ.tensor.item()):.3f}, states_visited {states_visited}")
