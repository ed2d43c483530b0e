"""NeuralUCB-style contextual bandit whose replay update reuses one preallocated feature buffer.

Report: https://github.com/pytorch/pytorch/issues/15115 -- "Some operations after ``.copy_()``
results in error in backward": the author kept one preallocated tensor ``x`` and, in a loop,
did ``x.detach_(); x.copy_(new_calc)`` and accumulated ``loss += f(x)``; the single
``loss.backward()`` at the end failed with "modified by an inplace operation", because each
``copy_`` overwrote the values an earlier term had saved. The training setting is the writer's:
a neural UCB agent (MLP body, linear reward head, exploration bonus from the covariance of the
gradient features of the head) refits on a replay window each round, writing each context's
body features into one preallocated buffer before the head reads them.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)

N_ARMS, D_CTX, HIDDEN = 4, 8, 32
ROUNDS, WINDOW, LAMBDA, NU = 40, 16, 1.0, 0.5


class RewardNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(D_CTX, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU())
        self.head = nn.Linear(HIDDEN, 1)

    def forward(self, x):
        return self.head(self.body(x)).squeeze(-1)


class Environment:
    def __init__(self):
        self.theta = torch.randn(D_CTX)

    def contexts(self):
        return torch.randn(N_ARMS, D_CTX) / D_CTX ** 0.5

    def reward(self, ctx):
        return torch.cos(3.0 * ctx @ self.theta) + 0.1 * torch.randn(())


def grad_feature(net, ctx):
    """Gradient of the predicted reward w.r.t. the head's parameters (the NeuralUCB feature)."""
    score = net(ctx.unsqueeze(0)).squeeze(0)
    grads = torch.autograd.grad(score, list(net.head.parameters()))
    return torch.cat([g.reshape(-1) for g in grads])


env = Environment()
net = RewardNet()
optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
n_feat = HIDDEN + 1
A_inv = torch.eye(n_feat) / LAMBDA
history_ctx, history_r = [], []
feat_buf = torch.empty(HIDDEN)          # reused for every replayed context

for t in range(ROUNDS):
    ctxs = env.contexts()
    with torch.no_grad():
        mu = net(ctxs)
    feats = torch.stack([grad_feature(net, c) for c in ctxs])
    bonus = NU * torch.sqrt(torch.einsum("ki,ij,kj->k", feats, A_inv, feats))
    arm = int(torch.argmax(mu + bonus))
    r = env.reward(ctxs[arm])
    g = feats[arm]
    A_inv = A_inv - (A_inv @ torch.outer(g, g) @ A_inv) / (1.0 + g @ A_inv @ g)
    history_ctx.append(ctxs[arm])
    history_r.append(r)

    if len(history_ctx) >= 4:
        loss = torch.zeros(())
        for ctx, rew in zip(history_ctx[-WINDOW:], history_r[-WINDOW:]):
            feat_buf.detach_()
            feat_buf.copy_(net.body(ctx))
            pred = net.head(feat_buf).squeeze(-1)
            loss = loss + (pred - rew) ** 2
        loss = loss / min(len(history_ctx), WINDOW)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if t % 10 == 0:
            print(f"round {t} arm {arm} reward {r.item():.3f} loss {loss.item():.4f}")
