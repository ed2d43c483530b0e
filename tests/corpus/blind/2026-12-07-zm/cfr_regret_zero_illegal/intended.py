"""Deep CFR on a small poker-like game: advantage networks with a non-negative regret head.

Report: https://github.com/JDAI-CV/LIO/issues/9 ("one of the variables needed for gradient
computation has been modified by an inplace operation ... output 0 of SubBackward0"). In LIO's
coordinate predictor (classification/models/coord_predict.py) the head is
``nn.Sequential(nn.Linear(2*in_dim, 2), nn.ReLU())`` and its output is then edited in place:
``preds_coord[basic_index, reduced_x_max_index, :] = 0.`` (the anchor's own prediction is
zeroed), followed by ``gap_angle[gap_angle < 0] += 1``. ReLU saves its output for backward, so
writing into it breaks the backward (with torch 2.x the first failing check is the ReLU output).

The training setting is the writer's: Deep CFR's advantage network predicts non-negative
(CFR+-style) regrets per action through a Linear + ReLU head; the traverser's illegal actions are
zeroed by indexing the head's output in place before the iteration-weighted MSE against sampled
regrets from the reservoir buffer. A separate average-strategy network is trained on the strategy
buffer with its own optimizer.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

INFO_DIM, N_ACTIONS = 18, 4
BATCH = 32


class AdvantageNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(INFO_DIM, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.regret_head = nn.Sequential(nn.Linear(64, N_ACTIONS), nn.ReLU())

    def forward(self, info):
        return self.regret_head(self.trunk(info))


class StrategyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(INFO_DIM, 64), nn.ReLU(), nn.Linear(64, N_ACTIONS))

    def forward(self, info, legal):
        logits = self.net(info).masked_fill(~legal, -1e9)
        return F.softmax(logits, dim=-1)


class ReservoirBuffer:
    """Synthetic stand-in for the traversal memories: info states, legal masks, targets, iterations."""

    def __init__(self, size, target_kind):
        self.info = torch.randn(size, INFO_DIM)
        self.legal = torch.rand(size, N_ACTIONS) > 0.25
        self.legal[:, 0] = True
        raw = torch.rand(size, N_ACTIONS) * self.legal
        if target_kind == "regret":
            self.target = raw * 2.0
        else:
            self.target = raw / raw.sum(dim=1, keepdim=True)
        self.iteration = torch.randint(1, 20, (size,)).float()

    def sample(self, n):
        idx = torch.randint(0, self.info.shape[0], (n,))
        return self.info[idx], self.legal[idx], self.target[idx], self.iteration[idx]


def regret_matching(regrets, legal):
    pos = regrets.clamp(min=0) * legal
    total = pos.sum(dim=1, keepdim=True)
    uniform = legal.float() / legal.sum(dim=1, keepdim=True)
    return torch.where(total > 0, pos / total.clamp(min=1e-9), uniform)


adv_net = AdvantageNet()
strategy_net = StrategyNet()
adv_opt = torch.optim.Adam(adv_net.parameters(), lr=1e-3)
strategy_opt = torch.optim.Adam(strategy_net.parameters(), lr=1e-3)
adv_memory = ReservoirBuffer(512, "regret")
strategy_memory = ReservoirBuffer(512, "strategy")

for it in range(4):
    info, legal, sampled_regret, t = adv_memory.sample(BATCH)
    pred_regret = adv_net(info)
    pred_regret = pred_regret * legal  # illegal actions carry no regret (out of place)
    weight = t / t.mean()
    adv_loss = (weight.unsqueeze(1) * (pred_regret - sampled_regret) ** 2).mean()
    adv_opt.zero_grad()
    adv_loss.backward()
    adv_opt.step()

    info_s, legal_s, avg_strategy, t_s = strategy_memory.sample(BATCH)
    probs = strategy_net(info_s, legal_s)
    strategy_loss = ((t_s / t_s.mean()).unsqueeze(1) * (probs - avg_strategy) ** 2).mean()
    strategy_opt.zero_grad()
    strategy_loss.backward()
    strategy_opt.step()

    with torch.no_grad():
        sigma = regret_matching(adv_net(info[:4]), legal[:4])
    print(f"iter {it}: adv {adv_loss.item():.4f} strategy {strategy_loss.item():.4f} sigma0 {sigma[0].tolist()}")
