"""AlphaZero-style self-play training with a static loss-scaling optimizer wrapper.

Report: https://github.com/NVIDIA/apex/issues/85 ("FP16_Optimizer has no way to
'retain_graph=True'"). The author called ``optimizer.backward(loss1)`` and then
``optimizer.backward(loss2)`` on two losses that share one forward pass and got "Trying to
backward through the graph a second time"; the wrapper's ``backward(loss)`` took no
``retain_graph`` argument to pass on. The maintainer added the option, so that the first call can
keep the graph for the second.

The training setting is the writer's: a small residual policy-value network for 6x6 Connect-Four
like positions, trained on search targets (visit-count distributions and game outcomes) from a
replay buffer. The author wraps SGD in a hand-written static loss scaler (the same interface as
FP16_Optimizer: backward(loss), step(), zero_grad()) and backpropagates the policy and value losses
one after the other.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

ROWS, COLS = 6, 6
BATCH = 32


class ResBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.c1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.b1 = nn.BatchNorm2d(ch)
        self.c2 = nn.Conv2d(ch, ch, 3, padding=1)
        self.b2 = nn.BatchNorm2d(ch)

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(x + y)


class PolicyValueNet(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, ch, 3, padding=1), nn.BatchNorm2d(ch), nn.ReLU())
        self.blocks = nn.Sequential(ResBlock(ch), ResBlock(ch))
        self.policy_head = nn.Sequential(nn.Conv2d(ch, 2, 1), nn.ReLU(), nn.Flatten(), nn.Linear(2 * ROWS * COLS, COLS))
        self.value_head = nn.Sequential(nn.Conv2d(ch, 1, 1), nn.ReLU(), nn.Flatten(), nn.Linear(ROWS * COLS, 32), nn.ReLU(), nn.Linear(32, 1), nn.Tanh())

    def forward(self, board):
        h = self.blocks(self.stem(board))
        return self.policy_head(h), self.value_head(h).squeeze(1)


class StaticLossScaler:
    """Scales losses before backward and unscales gradients before the step (FP16_Optimizer-like)."""

    def __init__(self, optimizer, scale=128.0):
        self.optimizer = optimizer
        self.scale = scale

    def zero_grad(self):
        self.optimizer.zero_grad()

    def backward(self, loss):
        (loss * self.scale).backward()

    def step(self):
        for group in self.optimizer.param_groups:
            grads = [q.grad for q in group["params"] if q.grad is not None]
            torch._foreach_div_(grads, self.scale)
        self.optimizer.step()


def replay_batch(n):
    """Synthetic self-play samples: board planes (own, opponent, to-move), MCTS visit targets, outcomes."""
    own = (torch.rand(n, 1, ROWS, COLS) < 0.2).float()
    opp = (torch.rand(n, 1, ROWS, COLS) < 0.2).float() * (1 - own)
    to_move = torch.ones(n, 1, ROWS, COLS) * (torch.rand(n, 1, 1, 1) < 0.5).float()
    visits = torch.rand(n, COLS) ** 3
    pi = visits / visits.sum(dim=1, keepdim=True)
    z = torch.randint(0, 3, (n,)).float() - 1.0
    return torch.cat([own, opp, to_move], dim=1), pi, z


net = PolicyValueNet()
sgd = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.9, weight_decay=1e-4)
optimizer = StaticLossScaler(sgd)

for step in range(4):
    boards, pi_target, z = replay_batch(BATCH)
    logits, value = net(boards)
    policy_loss = -(pi_target * F.log_softmax(logits, dim=1)).sum(dim=1).mean()
    value_loss = F.mse_loss(value, z)

    optimizer.zero_grad()
    optimizer.backward(policy_loss)
    optimizer.backward(value_loss)
    optimizer.step()
    print(f"step {step}: policy {policy_loss.item():.4f} value {value_loss.item():.4f}")
