"""Invariant learning with inferred environments (ZIN): IRMv1 penalty over environments learned from auxiliary z.

Reduced from https://github.com/linyongver/ZIN_official/issues/1 (the official code of "ZIN: When and How to
Learn Invariance Without Environment Partition?"). The environments are not given: a small ``InferEnv``
network maps the auxiliary variable z to a soft environment assignment, and is trained by gradient *ascent*
on the IRMv1 penalty with its own Adam optimizer during the annealing phase. The predictor (an MLP,
with a dummy ``scale`` for the IRMv1 gradient) is trained by ``main.py``'s loop on the NLL plus an L2
term plus the penalty, whose weight is 0 until ``penalty_anneal_iters``. The reporter hits an error at the
first step with PyTorch 1.7; a second user reports the same on their own data.

Synthetic "logit_z" data: y depends on an invariant feature and, with environment-dependent sign,
on a spurious one; z is a noisy indicator of the environment.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Flags:
    hidden_dim = 16
    lr = 1e-3
    l2_regularizer_weight = 1e-3
    penalty_weight = 1e4
    penalty_anneal_iters = 50
    steps = 5
    irm_type = "infer_irmv1"


class MLP(nn.Module):
    def __init__(self, flags, in_dim=2):
        super().__init__()
        self.lin1 = nn.Linear(in_dim, flags.hidden_dim)
        self.lin2 = nn.Linear(flags.hidden_dim, 1)
        self._main = nn.Sequential(self.lin1, nn.ReLU(True), self.lin2)

    def forward(self, x):
        return self._main(x)


class InferEnv(nn.Module):
    def __init__(self, flags, z_dim):
        super().__init__()
        self.lin1 = nn.Linear(z_dim, flags.hidden_dim)
        self.lin2 = nn.Linear(flags.hidden_dim, 1)
        for lin in [self.lin1, self.lin2]:
            nn.init.xavier_uniform_(lin.weight)
            nn.init.zeros_(lin.bias)
        self._main = nn.Sequential(self.lin1, nn.ReLU(True), self.lin2, nn.Sigmoid())

    def forward(self, input):
        return self._main(input)


class InferIrmV1:
    def __init__(self, flags):
        self.flags = flags
        self.infer_env = InferEnv(flags, z_dim=1)
        self.optimizer_infer_env = torch.optim.Adam(self.infer_env.parameters(), lr=0.001)

    def __call__(self, batch_data, step, mlp=None, scale=None):
        train_x, train_y, train_z = batch_data
        normed_z = (train_z - train_z.mean()) / train_z.std()
        train_logits = scale * mlp(train_x)
        train_nll = F.binary_cross_entropy_with_logits(train_logits, train_y, reduction="none")
        infered_envs = self.infer_env(normed_z)
        env1_loss = (train_nll * infered_envs).mean()
        env2_loss = (train_nll * (1 - infered_envs)).mean()
        grad1 = torch.autograd.grad(env1_loss, [scale], create_graph=True)[0]
        grad2 = torch.autograd.grad(env2_loss, [scale], create_graph=True)[0]
        train_penalty = grad1**2 + grad2**2
        train_nll = train_nll.mean()

        if step < self.flags.penalty_anneal_iters:
            # gradient ascend on infer_env net
            self.optimizer_infer_env.zero_grad()
            (-train_penalty).backward(retain_graph=True)
            self.optimizer_infer_env.step()

        return train_nll, train_penalty


class DataProvider:
    def __init__(self, n=256, batch=64):
        env = (torch.rand(n, 1) < 0.5).float()
        y = (torch.rand(n, 1) < 0.5).float()
        inv = (2 * y - 1) + 0.8 * torch.randn(n, 1)
        spur = (2 * y - 1) * (2 * env - 1) * 1.5 + 0.5 * torch.randn(n, 1)
        self.x = torch.cat([inv, spur], 1)
        self.y = y
        self.z = env + 0.3 * torch.randn(n, 1)
        self.batch = batch
        self.i = 0

    def fetch_train(self):
        sl = slice(self.i, self.i + self.batch)
        self.i = (self.i + self.batch) % self.x.shape[0]
        return self.x[sl], self.y[sl], self.z[sl]


def main(flags):
    dp = DataProvider()
    mlp = MLP(flags)
    optimizer = torch.optim.Adam(mlp.parameters(), lr=flags.lr)
    scale = torch.tensor(1.0).requires_grad_()
    algo = InferIrmV1(flags)
    train_batch_num = 4

    for step in range(flags.steps):
        mlp.train()
        for batch in range(train_batch_num):
            batch_data = dp.fetch_train()
            train_nll, train_penalty = algo(batch_data, step, mlp, scale)

            weight_norm = sum(w.norm().pow(2) for w in mlp.parameters())

            loss = train_nll.clone()
            loss += flags.l2_regularizer_weight * weight_norm
            penalty_weight = flags.penalty_weight if step >= flags.penalty_anneal_iters else 0.0
            if flags.irm_type == "erm":
                penalty_weight = 0
            train_penalty = torch.max(torch.tensor(0.0), train_penalty)
            loss += penalty_weight * train_penalty
            if penalty_weight > 1.0:
                loss /= 1.0 + penalty_weight

            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"step {step} train_nll {train_nll.item():.4f} penalty {train_penalty.item():.6f}")


if __name__ == "__main__":
    main(Flags())
