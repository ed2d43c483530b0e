"""Active Domain Randomization: an SVPG agent proposes simulator randomization settings for robot training.

Reduced from https://github.com/montrealrobotics/active-domainrand/issues/9 (common/svpg/svpg.py):
several SVPG particles, each an actor-critic (separate actor body, Gaussian head, critic) with its own
Adam and a frozen prior particle for a KL bonus, roll out trajectories of randomization settings;
`train()` fits each particle's critic to the returns, collects its policy gradient, and combines the
particles' policy gradients with an RBF kernel (Stein variational policy gradient) before the final
step. The discriminator reward of the real pipeline is replaced by a fixed synthetic reward of the
settings; numpy stands in for scipy's pdist.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.distributions import Normal
from torch.distributions.kl import kl_divergence

torch.manual_seed(0)
np.random.seed(0)

LEARNING_RATE = 3e-4
HIDDEN_DIMENSIONS = 32


class SVPGParticle(nn.Module):
    def __init__(self, input_dim, output_dim, hidden_dim, freeze=False):
        super().__init__()
        self.critic = nn.Sequential(
            nn.Linear(input_dim, hidden_dim), nn.Tanh(), nn.Linear(hidden_dim, hidden_dim), nn.Tanh(),
            nn.Linear(hidden_dim, 1),
        )
        self.actor_hidden = nn.Sequential(
            nn.Linear(input_dim, hidden_dim), nn.Tanh(), nn.Linear(hidden_dim, hidden_dim), nn.Tanh()
        )
        self.mean = nn.Linear(hidden_dim, output_dim)
        self.logstd = nn.Parameter(torch.zeros(output_dim))
        if freeze:
            for p in self.parameters():
                p.requires_grad = False
        self.reset()

    def forward(self, x):
        dist = Normal(self.mean(self.actor_hidden(x)), self.logstd.exp())
        value = self.critic(x)
        return dist, value

    def reset(self):
        self.saved_log_probs = []
        self.saved_klds = []


def parameters_to_vector(parameters, both=False):
    params, grads = [], []
    for p in parameters:
        params.append(p.data.view(-1))
        grads.append(torch.zeros_like(p).view(-1) if p.grad is None else p.grad.view(-1))
    return torch.cat(params), torch.cat(grads)


def vector_to_parameters(vec, parameters, grad=True):
    offset = 0
    for p in parameters:
        n = p.numel()
        p.grad = vec[offset : offset + n].view_as(p).clone()
        offset += n


class SVPG:
    def __init__(self, nagents, nparams, max_step_length, svpg_rollout_length, svpg_horizon, temperature,
                 kld_coefficient):
        self.particles = nn.ModuleList()
        self.prior_particles = []
        self.optimizers = []
        self.max_step_length = max_step_length
        self.svpg_rollout_length = svpg_rollout_length
        self.svpg_horizon = svpg_horizon
        self.temperature = temperature
        self.nagents = nagents
        self.gamma = 0.99
        self.nparams = nparams
        self.kld_coefficient = kld_coefficient

        self.last_states = np.random.uniform(0, 1, (self.nagents, self.nparams))
        self.timesteps = np.zeros(self.nagents)

        for i in range(self.nagents):
            policy = SVPGParticle(nparams, nparams, HIDDEN_DIMENSIONS)
            prior_policy = SVPGParticle(nparams, nparams, HIDDEN_DIMENSIONS, freeze=True)
            optimizer = optim.Adam(policy.parameters(), lr=LEARNING_RATE)
            self.particles.append(policy)
            self.prior_particles.append(prior_policy)
            self.optimizers.append(optimizer)

    def _Kxx_dxKxx(self, X):
        X_np = X.cpu().data.numpy()
        diff = X_np[:, None, :] - X_np[None, :, :]
        pairwise_dists = (diff**2).sum(-1)
        h = np.median(pairwise_dists)
        h = np.sqrt(0.5 * h / np.log(self.nagents + 1))
        Kxx = torch.exp(-torch.from_numpy(pairwise_dists).float() / h**2 / 2)
        dxKxx = -(Kxx).matmul(X)
        sumKxx = Kxx.sum(1)
        for i in range(X.shape[1]):
            dxKxx[:, i] = dxKxx[:, i] + X[:, i].matmul(sumKxx)
        dxKxx /= h**2
        return Kxx, dxKxx

    def select_action(self, policy_idx, state):
        state = torch.from_numpy(state).float().unsqueeze(0)
        policy = self.particles[policy_idx]
        prior_policy = self.prior_particles[policy_idx]
        dist, value = policy(state)
        prior_dist, _ = prior_policy(state)
        action = dist.sample()
        policy.saved_log_probs.append(dist.log_prob(action).sum(-1))
        policy.saved_klds.append(kl_divergence(dist, prior_dist).sum(-1))
        return action.squeeze(0).detach().numpy(), value

    def compute_returns(self, next_value, rewards, masks, klds):
        R = next_value
        returns = []
        for step in reversed(range(len(rewards))):
            R = self.gamma * masks[step] * R + (rewards[step] - self.kld_coefficient * klds[step])
            returns.insert(0, R)
        return returns

    def step(self):
        self.simulation_instances = np.zeros((self.nagents, self.svpg_rollout_length, self.nparams))
        # Store the values of each state - for advantage estimation
        self.values = torch.zeros((self.nagents, self.svpg_rollout_length, 1)).float()
        self.masks = np.ones((self.nagents, self.svpg_rollout_length))

        for i in range(self.nagents):
            self.particles[i].reset()
            current_sim_params = self.last_states[i]
            for t in range(self.svpg_rollout_length):
                self.simulation_instances[i][t] = current_sim_params
                action, value = self.select_action(i, current_sim_params)
                self.values[i][t] = value
                clipped_action = np.clip(action, -1, 1) * self.max_step_length
                next_params = np.clip(current_sim_params + clipped_action, 0, 1)
                if np.array_equal(next_params, current_sim_params) or self.timesteps[i] + 1 == self.svpg_horizon:
                    next_params = np.random.uniform(0, 1, (self.nparams,))
                    self.masks[i][t] = 0
                    self.timesteps[i] = 0
                current_sim_params = next_params
                self.timesteps[i] += 1
            self.last_states[i] = current_sim_params
        return np.array(self.simulation_instances)

    def train(self, simulator_rewards):
        policy_grads = []
        parameters = []

        for i in range(self.nagents):
            policy_grad_particle = []
            _, next_value = self.select_action(i, self.last_states[i])
            particle_rewards = torch.from_numpy(simulator_rewards[i]).float()
            masks = torch.from_numpy(self.masks[i]).float()

            returns = self.compute_returns(next_value, particle_rewards, masks, self.particles[i].saved_klds)
            returns = torch.cat(returns).detach()
            advantages = returns - self.values[i]

            for log_prob, advantage in zip(self.particles[i].saved_log_probs, advantages):
                policy_grad_particle.append(log_prob * advantage.detach())

            # Compute value loss, update critic
            self.optimizers[i].zero_grad()
            critic_loss = 0.5 * advantages.pow(2).mean()
            critic_loss.backward(retain_graph=True)
            self.optimizers[i].step()

            # Store policy gradients for SVPG update
            self.optimizers[i].zero_grad()
            policy_grad = -torch.cat(policy_grad_particle).mean()
            policy_grad.backward()

            vec_param, vec_policy_grad = parameters_to_vector(self.particles[i].parameters(), both=True)
            policy_grads.append(vec_policy_grad.unsqueeze(0))
            parameters.append(vec_param.unsqueeze(0))

        parameters = torch.cat(parameters)
        Kxx, dxKxx = self._Kxx_dxKxx(parameters)
        policy_grads = 1 / self.temperature * torch.cat(policy_grads)
        grad_logp = torch.mm(Kxx, policy_grads)
        grad_theta = (grad_logp + dxKxx) / self.nagents

        for i in range(self.nagents):
            vector_to_parameters(grad_theta[i], self.particles[i].parameters(), grad=True)
            self.optimizers[i].step()


def simulator_rewards(simulation_instances):
    """Stand-in for the discriminator reward: settings far from the reference environment score higher."""
    reference = np.array([0.5, 0.5])
    return np.linalg.norm(simulation_instances - reference, axis=-1)


def main():
    svpg = SVPG(nagents=3, nparams=2, max_step_length=0.05, svpg_rollout_length=5, svpg_horizon=25,
                temperature=10.0, kld_coefficient=0.01)
    for iteration in range(4):
        simulation_settings = svpg.step()
        rewards = simulator_rewards(simulation_settings)
        svpg.train(rewards)
        print(f"iteration {iteration}: mean reward {rewards.mean():.3f}")


if __name__ == "__main__":
    main()
