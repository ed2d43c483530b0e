"""Job-shop scheduling with a graph policy over operations and masked actions.

Source: https://discuss.pytorch.org/t/which-is-freed-which-is-not/8636 -- the author
computes ``y = torch.sum(x(a))`` once and calls ``y.backward()`` inside a loop; the
second call fails with "Trying to backward through the graph a second time", while
the same loop with the forward inside it runs. The question is which parts of the
graph are freed by the first backward.

The training setting is the writer's: a dispatching policy (message passing over the
operation precedence graph, a score per operation, infeasible operations masked)
collects a batch of episodes on random 3x3 job-shop instances, then takes several
update epochs on that batch, PPO style. The clipped surrogate is built once from the
rollout's log-probabilities, before the epoch loop, and only ``loss.backward()`` and
``optimizer.step()`` are repeated -- the report's loss-outside-the-loop mechanism.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_JOBS, N_MACHINES = 3, 3
N_OPS = N_JOBS * N_MACHINES
N_EPISODES = 4
K_EPOCHS = 3
CLIP = 0.2


def random_instance():
    machines = torch.stack([torch.randperm(N_MACHINES) for _ in range(N_JOBS)])   # job x step
    durations = torch.randint(1, 10, (N_JOBS, N_MACHINES)).float()
    adj = torch.zeros(N_OPS, N_OPS)
    for j in range(N_JOBS):
        for s in range(N_MACHINES - 1):
            adj[j * N_MACHINES + s + 1, j * N_MACHINES + s] = 1.0   # op <- predecessor
    return machines, durations, adj + torch.eye(N_OPS)


class ScheduleEnv:
    def __init__(self, machines, durations):
        self.machines, self.durations = machines, durations
        self.next_step = [0] * N_JOBS
        self.job_ready = [0.0] * N_JOBS
        self.mach_ready = [0.0] * N_MACHINES
        self.done_ops = torch.zeros(N_OPS)

    def features(self):
        f = torch.zeros(N_OPS, 4)
        for j in range(N_JOBS):
            for s in range(N_MACHINES):
                o = j * N_MACHINES + s
                f[o, 0] = self.durations[j, s] / 10
                f[o, 1] = self.done_ops[o]
                f[o, 2] = self.job_ready[j] / 50
                f[o, 3] = self.mach_ready[int(self.machines[j, s])] / 50
        return f

    def mask(self):
        m = torch.zeros(N_OPS, dtype=torch.bool)
        for j in range(N_JOBS):
            if self.next_step[j] < N_MACHINES:
                m[j * N_MACHINES + self.next_step[j]] = True
        return m

    def step(self, op):
        j, s = divmod(op, N_MACHINES)
        m = int(self.machines[j, s])
        start = max(self.job_ready[j], self.mach_ready[m])
        end = start + float(self.durations[j, s])
        self.job_ready[j] = self.mach_ready[m] = end
        self.next_step[j] += 1
        self.done_ops[op] = 1.0
        return max(self.mach_ready)


class OperationGraphPolicy(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.inp = nn.Linear(4, dim)
        self.msg1 = nn.Linear(dim, dim)
        self.msg2 = nn.Linear(dim, dim)
        self.score = nn.Sequential(nn.Linear(2 * dim, dim), nn.Tanh(), nn.Linear(dim, 1))

    def forward(self, feats, adj, mask):
        deg = adj.sum(-1, keepdim=True)
        h = torch.relu(self.inp(feats))
        h = torch.relu(self.msg1(adj @ h / deg)) + h
        h = torch.relu(self.msg2(adj @ h / deg)) + h
        g = h.mean(0, keepdim=True).expand_as(h)
        logits = self.score(torch.cat([h, g], -1)).squeeze(-1)
        return logits.masked_fill(~mask, float("-inf"))


def rollout(policy):
    machines, durations, adj = random_instance()
    env = ScheduleEnv(machines, durations)
    states, log_probs, actions = [], [], []
    makespan = 0.0
    for _ in range(N_OPS):
        feats, mask = env.features(), env.mask()
        dist = torch.distributions.Categorical(logits=policy(feats, adj, mask))
        a = dist.sample()
        states.append((feats, adj, mask))
        actions.append(a)
        log_probs.append(dist.log_prob(a))
        makespan = env.step(int(a))
    return states, torch.stack(actions), torch.stack(log_probs), -makespan / 50


policy = OperationGraphPolicy()
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)

for iteration in range(3):
    batch = [rollout(policy) for _ in range(N_EPISODES)]
    returns = torch.tensor([b[3] for b in batch])
    advantages = (returns - returns.mean()) / (returns.std() + 1e-6)
    old_log_probs = [b[2].detach() for b in batch]

    new_log_probs = [b[2] for b in batch]
    surrogate = []
    for lp_new, lp_old, adv in zip(new_log_probs, old_log_probs, advantages):
        ratio = torch.exp(lp_new - lp_old)
        surrogate.append(torch.min(ratio * adv, ratio.clamp(1 - CLIP, 1 + CLIP) * adv).sum())
    loss = -torch.stack(surrogate).mean()

    for epoch in range(K_EPOCHS):
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"iteration {iteration} mean makespan {-returns.mean().item() * 50:.1f}")
