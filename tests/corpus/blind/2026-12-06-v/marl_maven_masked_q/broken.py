"""MAVEN-style QMIX on a synthetic multi-agent task: a hypernetwork mixer conditioned on the state and a
latent "noise" z, plus a discriminator that predicts z from the agents' softmaxed Q-values (the
mutual-information term of MAVEN, Mahajan et al. 2019).

Reduced from https://github.com/AnujMahajanOxf/MAVEN/issues/3: the author was reproducing MAVEN's
noise-QMIX learner (pymarl layout: per-agent GRU Q-networks, mixer, target networks, discriminator,
one RMSprop over everything). ``loss.backward()`` failed with "one of the variables needed for gradient
computation has been modified by an inplace operation: [..., 56, 3, 9], which is output 0 of
SliceBackward": the learner masks unavailable actions with ``mac_out[avail_actions == 0] = -9999999``
in place on the very Q tensor whose slice ``mac_out[:, :-1]`` the chosen-action ``gather`` already saved.
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_AGENTS, N_ACTIONS, OBS, STATE, NOISE, HID, EMB = 3, 5, 10, 12, 2, 32, 16
BATCH, T = 8, 6
GAMMA, MI_LOSS = 0.99, 0.1


class RNNAgent(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(OBS + N_AGENTS, HID)
        self.rnn = nn.GRUCell(HID, HID)
        self.fc2 = nn.Linear(HID, N_ACTIONS)

    def forward(self, obs, h):
        h = self.rnn(F.relu(self.fc1(obs)), h)
        return self.fc2(h), h


class NoiseQMixer(nn.Module):
    """QMIX mixer whose hypernetworks read the state and the episode's noise z."""

    def __init__(self):
        super().__init__()
        self.hyper_w1 = nn.Linear(STATE + NOISE, EMB * N_AGENTS)
        self.hyper_b1 = nn.Linear(STATE + NOISE, EMB)
        self.hyper_w2 = nn.Linear(STATE + NOISE, EMB)
        self.v = nn.Sequential(nn.Linear(STATE + NOISE, EMB), nn.ReLU(), nn.Linear(EMB, 1))

    def forward(self, agent_qs, states, noise):
        inp = torch.cat([states, noise], dim=-1).reshape(-1, STATE + NOISE)
        qs = agent_qs.reshape(-1, 1, N_AGENTS)
        w1 = torch.abs(self.hyper_w1(inp)).view(-1, N_AGENTS, EMB)
        hidden = F.elu(torch.bmm(qs, w1) + self.hyper_b1(inp).view(-1, 1, EMB))
        w2 = torch.abs(self.hyper_w2(inp)).view(-1, EMB, 1)
        y = torch.bmm(hidden, w2) + self.v(inp).view(-1, 1, 1)
        return y.view(agent_qs.shape[0], -1)


class Discrim(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(N_AGENTS * N_ACTIONS + STATE, HID), nn.ReLU(), nn.Linear(HID, NOISE))

    def forward(self, x):
        return self.net(x)


def unroll(agent, obs):
    """Q-values of every agent at every step: (batch, T, agents, actions)."""
    ids = torch.eye(N_AGENTS).expand(BATCH, N_AGENTS, N_AGENTS)
    h = torch.zeros(BATCH * N_AGENTS, HID)
    outs = []
    for t in range(obs.shape[1]):
        inp = torch.cat([obs[:, t], ids], dim=-1).reshape(BATCH * N_AGENTS, -1)
        q, h = agent(inp, h)
        outs.append(q.view(BATCH, N_AGENTS, N_ACTIONS))
    return torch.stack(outs, dim=1)


def sample_batch():
    obs = torch.randn(BATCH, T + 1, N_AGENTS, OBS)
    state = torch.randn(BATCH, T + 1, STATE)
    avail = (torch.rand(BATCH, T + 1, N_AGENTS, N_ACTIONS) > 0.3).float()
    avail[..., 0] = 1.0  # no-op always available
    actions = torch.multinomial(avail.view(-1, N_ACTIONS), 1).view(BATCH, T + 1, N_AGENTS, 1)[:, :-1]
    reward = torch.randn(BATCH, T, 1)
    terminated = torch.zeros(BATCH, T, 1)
    z = F.one_hot(torch.randint(0, NOISE, (BATCH,)), NOISE).float()
    return obs, state, avail, actions, reward, terminated, z


agent = RNNAgent()
mixer = NoiseQMixer()
discrim = Discrim()
target_agent, target_mixer = copy.deepcopy(agent), copy.deepcopy(mixer)
params = list(agent.parameters()) + list(mixer.parameters()) + list(discrim.parameters())
optimiser = torch.optim.RMSprop(params, lr=5e-4, alpha=0.99, eps=1e-5)

for step in range(4):
    obs, state, avail, actions, reward, terminated, z = sample_batch()
    noise = z.unsqueeze(1).expand(BATCH, T, NOISE)

    mac_out = unroll(agent, obs)
    chosen_action_qvals = torch.gather(mac_out[:, :-1], dim=3, index=actions).squeeze(3)

    with torch.no_grad():
        target_mac_out = unroll(target_agent, obs)[:, 1:]
        target_mac_out[avail[:, 1:] == 0] = -9999999

    # mask unavailable actions for double-Q and for the discriminator
    mac_out[avail == 0] = -9999999
    cur_max_actions = mac_out[:, 1:].max(dim=3, keepdim=True)[1]
    with torch.no_grad():
        target_max_qvals = torch.gather(target_mac_out, 3, cur_max_actions).squeeze(3)
        target_tot = target_mixer(target_max_qvals, state[:, 1:], noise)

    q_tot = mixer(chosen_action_qvals, state[:, :-1], noise)

    q_softmax = F.softmax(mac_out[:, :-1], dim=3).reshape(BATCH, T, -1)
    discrim_in = torch.cat([q_softmax, state[:, :-1]], dim=2).reshape(-1, N_AGENTS * N_ACTIONS + STATE)
    discrim_target = z.argmax(dim=1).repeat_interleave(T)
    discrim_loss = F.cross_entropy(discrim(discrim_in), discrim_target)

    targets = reward.squeeze(-1) + GAMMA * (1 - terminated.squeeze(-1)) * target_tot
    td_loss = ((q_tot - targets.detach()) ** 2).mean()
    loss = td_loss + MI_LOSS * discrim_loss

    optimiser.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 10.0)
    optimiser.step()

    if step % 2 == 1:
        target_agent.load_state_dict(agent.state_dict())
        target_mixer.load_state_dict(mixer.state_dict())
    print(f"step {step}: td {td_loss.item():.4f} discrim {discrim_loss.item():.4f}")
