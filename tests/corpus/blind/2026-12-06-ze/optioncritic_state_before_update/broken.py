"""Option-critic on a small feature-vector task: the next state's features are computed before the update.

Source: https://github.com/lweitkamp/option-critic-pytorch/issues/5 (also #9). The author's
option-critic (shared feature trunk, policy-over-options Q head, termination head, intra-option
softmax policies as raw parameter tensors, RMSprop) computed ``state = get_state(next_obs)`` right
after ``env.step``, before the actor/critic update of that step, and carried it to the next step,
where ``get_action(state, option)`` builds the log-probability of the next action from it. The
update's ``optimizer.step()`` rewrites the trunk's weights in place in between, so the next
backward through ``logp`` fails with "modified by an inplace operation" (the reporter's tensor was
the trunk's [32, 64] Linear weight). The author's fix moved the feature computation after the
update. The environment here is a synthetic one (random linear dynamics on a 6-d observation).
"""
import copy

import torch
import torch.nn as nn
from torch.distributions import Bernoulli, Categorical

torch.manual_seed(0)

OBS, N_ACT, N_OPT, BATCH, GAMMA = 6, 3, 2, 8, 0.99
TERM_REG, ENT_REG, UPDATE_FREQ, FREEZE = 0.01, 0.01, 4, 20


class ToyEnv:
    def __init__(self):
        self.A = torch.randn(N_ACT, OBS, OBS) * 0.3
        self.goal = torch.randn(OBS)

    def reset(self):
        self.obs = torch.randn(OBS)
        self.t = 0
        return self.obs

    def step(self, action):
        self.obs = torch.tanh(self.A[action] @ self.obs + 0.1 * torch.randn(OBS))
        self.t += 1
        reward = -float((self.obs - self.goal).pow(2).mean())
        return self.obs, reward, self.t >= 12


class OptionCriticFeatures(nn.Module):
    def __init__(self, in_features, num_actions, num_options, temperature=1.0):
        super().__init__()
        self.temperature = temperature
        self.features = nn.Sequential(nn.Linear(in_features, 32), nn.ReLU(), nn.Linear(32, 64), nn.ReLU())
        self.Q = nn.Linear(64, num_options)
        self.terminations = nn.Linear(64, num_options)
        self.options_W = nn.Parameter(torch.zeros(num_options, 64, num_actions))
        self.options_b = nn.Parameter(torch.zeros(num_options, num_actions))

    def get_state(self, obs):
        return self.features(obs.unsqueeze(0) if obs.ndim == 1 else obs)

    def get_Q(self, state):
        return self.Q(state)

    def get_terminations(self, state):
        return self.terminations(state).sigmoid()

    def predict_option_termination(self, state, option):
        termination = self.get_terminations(state)[:, option]
        next_option = self.get_Q(state).argmax(dim=-1)
        return bool(Bernoulli(termination).sample().item()), int(next_option.item())

    def get_action(self, state, option):
        logits = state @ self.options_W[option] + self.options_b[option]
        dist = Categorical((logits / self.temperature).softmax(dim=-1))
        action = dist.sample()
        return int(action.item()), dist.log_prob(action), dist.entropy()


def critic_loss_fn(model, model_prime, batch):
    obs, options, rewards, next_obs, dones = batch
    idx = torch.arange(len(options))
    Q = model.get_Q(model.get_state(obs))
    next_Q_prime = model_prime.get_Q(model_prime.get_state(next_obs))
    next_beta = model.get_terminations(model.get_state(next_obs)).detach()[idx, options]
    gt = rewards + (1 - dones) * GAMMA * ((1 - next_beta) * next_Q_prime[idx, options] + next_beta * next_Q_prime.max(dim=-1)[0])
    return (Q[idx, options] - gt.detach()).pow(2).mul(0.5).mean()


def actor_loss_fn(obs, option, logp, entropy, reward, done, next_obs, model, model_prime):
    state, next_state = model.get_state(obs), model.get_state(next_obs)
    next_state_prime = model_prime.get_state(next_obs)
    option_term_prob = model.get_terminations(state)[:, option]
    next_option_term_prob = model.get_terminations(next_state)[:, option].detach()
    Q = model.get_Q(state).detach().squeeze()
    next_Q_prime = model_prime.get_Q(next_state_prime).detach().squeeze()
    gt = reward + (1 - done) * GAMMA * ((1 - next_option_term_prob) * next_Q_prime[option] + next_option_term_prob * next_Q_prime.max(dim=-1)[0])
    termination_loss = option_term_prob * (Q[option] - Q.max(dim=-1)[0] + TERM_REG) * (1 - done)
    policy_loss = -logp * (gt.detach() - Q[option]) - ENT_REG * entropy
    return (termination_loss + policy_loss).sum()


env = ToyEnv()
option_critic = OptionCriticFeatures(OBS, N_ACT, N_OPT)
option_critic_prime = copy.deepcopy(option_critic)
optimizer = torch.optim.RMSprop(option_critic.parameters(), lr=5e-4)
buffer = []
steps, epsilon = 0, 0.3

for episode in range(20):
    obs = env.reset()
    state = option_critic.get_state(obs)
    greedy_option = int(option_critic.get_Q(state).argmax(dim=-1).item())
    current_option, option_termination, done = 0, True, False
    while not done:
        if option_termination:
            current_option = int(torch.randint(N_OPT, ()).item()) if torch.rand(()) < epsilon else greedy_option
        action, logp, entropy = option_critic.get_action(state, current_option)
        next_obs, reward, done = env.step(action)
        buffer.append((obs, current_option, reward, next_obs, float(done)))

        # features of the next state, used for the termination draw and for the next action
        state = option_critic.get_state(next_obs)
        option_termination, greedy_option = option_critic.predict_option_termination(state, current_option)

        if len(buffer) > BATCH:
            actor_loss = actor_loss_fn(obs, current_option, logp, entropy, reward, float(done), next_obs, option_critic, option_critic_prime)
            loss = actor_loss
            if steps % UPDATE_FREQ == 0:
                picks = torch.randint(len(buffer), (BATCH,)).tolist()
                o, op, r, no, d = zip(*[buffer[i] for i in picks])
                batch = (torch.stack(o), torch.tensor(op), torch.tensor(r), torch.stack(no), torch.tensor(d))
                critic_loss = critic_loss_fn(option_critic, option_critic_prime, batch)
                loss = loss + critic_loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if steps % FREEZE == 0:
                option_critic_prime.load_state_dict(option_critic.state_dict())
        steps += 1
        obs = next_obs
    print(f"episode {episode} steps {steps}")
