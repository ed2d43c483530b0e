"""PPO for a legged-locomotion task: advantages computed once, with the critic's graph attached.

Report: https://github.com/hijkzzz/pymarl2/issues/46 ("MAPPO bug, trying to backward through
the graph a second time"). The author's PPO learner computes the advantages once, before the
``mini_epochs`` loop, and reuses them in every inner iteration; the first optimizer step frees
the graph those advantages still hang on, and the second iteration raises "Trying to backward
through the graph a second time". The reporter proposes detaching the advantages (the critic
is trained by its own value loss inside the loop). The training setting is the writer's: a
quadruped-like toy dynamics with observation normalisation, a Gaussian policy with a learned
log-std, a rollout buffer, GAE and clipped PPO updates over shuffled minibatches.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)

OBS, ACT, N_ENVS, HORIZON = 12, 4, 8, 16
GAMMA, LAM, CLIP, EPOCHS, MINIBATCHES = 0.99, 0.95, 0.2, 3, 4


class RunningMeanStd:
    def __init__(self, shape):
        self.mean = torch.zeros(shape)
        self.var = torch.ones(shape)
        self.count = 1e-4

    def update(self, x):
        b_mean, b_var, b_count = x.mean(0), x.var(0, unbiased=False), x.shape[0]
        delta = b_mean - self.mean
        tot = self.count + b_count
        self.mean = self.mean + delta * b_count / tot
        m2 = self.var * self.count + b_var * b_count + delta ** 2 * self.count * b_count / tot
        self.var = m2 / tot
        self.count = tot

    def normalize(self, x):
        return ((x - self.mean) / torch.sqrt(self.var + 1e-8)).clamp(-5.0, 5.0)


class ToyQuadruped:
    """Linear joint dynamics; reward = forward velocity - torque cost."""

    def __init__(self, n):
        self.A = torch.eye(OBS) * 0.95 + 0.02 * torch.randn(OBS, OBS)
        self.B = 0.1 * torch.randn(OBS, ACT)
        self.state = torch.randn(n, OBS)

    def step(self, action):
        self.state = self.state @ self.A.T + action.clamp(-1, 1) @ self.B.T + 0.01 * torch.randn_like(self.state)
        reward = self.state[:, 0] - 0.05 * (action ** 2).sum(-1)
        done = (self.state.abs().max(-1).values > 6.0).float()
        self.state = torch.where(done[:, None] > 0, torch.randn_like(self.state), self.state)
        return self.state.clone(), reward, done


class GaussianActor(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = nn.Sequential(nn.Linear(OBS, 64), nn.ELU(), nn.Linear(64, 64), nn.ELU(), nn.Linear(64, ACT))
        self.log_std = nn.Parameter(torch.full((ACT,), -0.5))

    def dist(self, obs):
        return torch.distributions.Normal(self.mu(obs), self.log_std.exp())


def compute_gae(rewards, values, dones, last_value):
    adv = torch.zeros_like(rewards)
    gae = 0.0
    for t in reversed(range(HORIZON)):
        next_v = last_value if t == HORIZON - 1 else values[t + 1]
        delta = rewards[t] + GAMMA * next_v * (1 - dones[t]) - values[t]
        gae = delta + GAMMA * LAM * (1 - dones[t]) * gae
        adv[t] = gae
    return adv


env = ToyQuadruped(N_ENVS)
obs_rms = RunningMeanStd(OBS)
actor = GaussianActor()
critic = nn.Sequential(nn.Linear(OBS, 64), nn.ELU(), nn.Linear(64, 64), nn.ELU(), nn.Linear(64, 1))
optimizer = torch.optim.Adam(list(actor.parameters()) + list(critic.parameters()), lr=3e-4)

obs = env.state.clone()
for update in range(3):
    obs_buf, act_buf, logp_buf, rew_buf, done_buf = [], [], [], [], []
    for t in range(HORIZON):
        obs_rms.update(obs)
        nobs = obs_rms.normalize(obs)
        with torch.no_grad():
            d = actor.dist(nobs)
            action = d.sample()
            logp = d.log_prob(action).sum(-1)
        next_obs, reward, done = env.step(action)
        obs_buf.append(nobs); act_buf.append(action); logp_buf.append(logp)
        rew_buf.append(reward); done_buf.append(done)
        obs = next_obs
    obs_b, act_b, logp_b = torch.stack(obs_buf), torch.stack(act_buf), torch.stack(logp_buf)
    rew_b, done_b = torch.stack(rew_buf), torch.stack(done_buf)

    # values for GAE, computed once per rollout
    values = critic(obs_b).squeeze(-1)
    last_value = critic(obs_rms.normalize(obs)).squeeze(-1)
    advantages = compute_gae(rew_b, values, done_b, last_value)
    returns = advantages + values
    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)

    flat = lambda x: x.reshape(HORIZON * N_ENVS, *x.shape[2:])
    f_obs, f_act, f_logp, f_adv, f_ret = map(flat, (obs_b, act_b, logp_b, advantages, returns))
    mb_size = HORIZON * N_ENVS // MINIBATCHES
    for epoch in range(EPOCHS):
        perm = torch.randperm(HORIZON * N_ENVS)
        for start in range(0, HORIZON * N_ENVS, mb_size):
            idx = perm[start:start + mb_size]
            d = actor.dist(f_obs[idx])
            ratio = torch.exp(d.log_prob(f_act[idx]).sum(-1) - f_logp[idx])
            surr1 = ratio * f_adv[idx]
            surr2 = ratio.clamp(1 - CLIP, 1 + CLIP) * f_adv[idx]
            actor_loss = -torch.min(surr1, surr2).mean()
            value_loss = (critic(f_obs[idx]).squeeze(-1) - f_ret[idx]).pow(2).mean()
            entropy = d.entropy().sum(-1).mean()
            loss = actor_loss + 0.5 * value_loss - 0.001 * entropy
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(list(actor.parameters()) + list(critic.parameters()), 1.0)
            optimizer.step()
    print(f"update {update}: loss {loss.item():.4f} mean reward {rew_b.mean().item():.3f}")
