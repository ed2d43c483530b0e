"""Subtitle-to-podcast alignment as a policy that picks a timing shift for each cue.

Source: https://discuss.pytorch.org/t/pytorch-runtimeerror-trying-to-backward-through-the-graph-a-second-time/191396

The author wrote PPO by hand: at every time step of an episode, two value-function
approximators V(s) and Q(s, a) each took their own gradient step, the advantage
A = Q - V was formed from their outputs, the clipped surrogate of that step was
computed and kept, and at the end of the episode the mean of the kept surrogates was
backpropagated for the policy network, which raised "Trying to backward through the
graph a second time". The reduction: one podcast episode is one RL episode, each cue
of the transcript is a step, the action is a shift among a few candidate offsets, the
reward is how well the shifted cue matches the speech onset; the critics update per
cue inside the rollout loop and the policy update sits in a function run at the end.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

SHIFTS_MS = torch.tensor([-400.0, -200.0, 0.0, 200.0, 400.0])
CUE_FEATURES = 10
CUES_PER_EPISODE = 5
EPISODES = 4
CLIP = 0.2


class ShiftPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(CUE_FEATURES, 32), nn.Tanh(), nn.Linear(32, len(SHIFTS_MS)))

    def forward(self, cue):
        return torch.distributions.Categorical(logits=self.net(cue))


class StateValue(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(CUE_FEATURES, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, cue):
        return self.net(cue).squeeze(-1)


class ActionValue(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(CUE_FEATURES + len(SHIFTS_MS), 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, cue, action):
        onehot = F.one_hot(action, len(SHIFTS_MS)).float()
        return self.net(torch.cat([cue, onehot], dim=-1)).squeeze(-1)


def synth_episode():
    cues = torch.randn(CUES_PER_EPISODE, CUE_FEATURES)
    true_offset = 300.0 * torch.tanh(cues[:, 0])
    return cues, true_offset


def alignment_reward(shift_ms, true_offset):
    return 1.0 - (shift_ms - true_offset).abs() / 400.0


def policy_update(policy_opt, surrogates):
    policy_loss = -torch.stack(surrogates).mean()
    policy_opt.zero_grad()
    policy_loss.backward()
    policy_opt.step()
    return policy_loss.item()


def main():
    torch.manual_seed(11)
    policy = ShiftPolicy()
    v_net = StateValue()
    q_net = ActionValue()
    policy_opt = torch.optim.Adam(policy.parameters(), lr=3e-3)
    critic_opt = torch.optim.SGD(list(v_net.parameters()) + list(q_net.parameters()), lr=1e-2)

    for episode in range(EPISODES):
        cues, true_offset = synth_episode()
        surrogates = []
        for i in range(CUES_PER_EPISODE):
            cue = cues[i]
            dist = policy(cue)
            action = dist.sample()
            reward = alignment_reward(SHIFTS_MS[action], true_offset[i])

            v = v_net(cue)
            q = q_net(cue, action)
            critic_loss = (q - reward) ** 2 + (v - reward) ** 2
            critic_opt.zero_grad()
            critic_loss.backward()
            critic_opt.step()

            advantage = q - v
            logp = dist.log_prob(action)
            ratio = torch.exp(logp - logp.detach())
            surrogates.append(torch.min(ratio * advantage, ratio.clamp(1 - CLIP, 1 + CLIP) * advantage))

        loss = policy_update(policy_opt, surrogates)
        print(f"episode {episode}: policy loss {loss:.4f}")


if __name__ == "__main__":
    main()
