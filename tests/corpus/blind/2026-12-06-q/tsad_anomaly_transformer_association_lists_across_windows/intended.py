"""Anomaly Transformer (unofficial PyTorch reimplementation) on sensor windows: time-series anomaly detection.

Reduced from https://github.com/spencerbraun/anomaly_transformer_pytorch/issues/4: the author trains
the repository's `AnomalyTransformer` (anomaly-attention blocks that keep each layer's prior
association P and series association S on the model, a minimize-phase loss with S stopped and a
maximize-phase loss with P stopped) with the repository's `train()` loop: one backward of the two
phase losses, gradient clipping, AdamW and a cosine schedule with warm-up, one window per step.
Synthetic multichannel windows stand in for the benchmark data.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N = 12  # window length
D_MODEL = 6  # channels
LAYERS = 2
LAMBDA = 3.0


class AnomalyAttention(nn.Module):
    def __init__(self, N, d_model):
        super(AnomalyAttention, self).__init__()
        self.d_model = d_model
        self.N = N

        self.Wq = nn.Linear(d_model, d_model, bias=False)
        self.Wk = nn.Linear(d_model, d_model, bias=False)
        self.Wv = nn.Linear(d_model, d_model, bias=False)
        self.Ws = nn.Linear(d_model, 1, bias=False)

        self.Q = self.K = self.V = self.sigma = torch.zeros((N, d_model))

        self.P = torch.zeros((N, N))
        self.S = torch.zeros((N, N))

    def forward(self, x):
        self.initialize(x)
        self.P = self.prior_association()
        self.S = self.series_association()
        Z = self.reconstruction()

        return Z

    def initialize(self, x):
        self.Q = self.Wq(x)
        self.K = self.Wk(x)
        self.V = self.Wv(x)
        self.sigma = self.Ws(x)
        self.sigma = torch.sigmoid(self.sigma * 5) + 1e-5
        self.sigma = torch.pow(3, self.sigma)

    @staticmethod
    def gaussian_kernel(mean, sigma):
        normalize = 1 / (math.sqrt(2 * torch.pi) * sigma)
        return normalize * torch.exp(-0.5 * (mean / sigma).pow(2))

    def prior_association(self):
        idx = torch.arange(self.N)
        p = (idx.view(-1, 1) - idx.view(1, -1)).abs()
        gaussian = self.gaussian_kernel(p.float(), self.sigma)
        gaussian /= gaussian.sum(dim=-1).view(-1, 1)

        return gaussian

    def series_association(self):
        return F.softmax((self.Q @ self.K.T) / math.sqrt(self.d_model), dim=0)

    def reconstruction(self):
        return self.S @ self.V


class AnomalyTransformerBlock(nn.Module):
    def __init__(self, N, d_model):
        super().__init__()
        self.N, self.d_model = N, d_model

        self.attention = AnomalyAttention(self.N, self.d_model)
        self.ln1 = nn.LayerNorm(self.d_model)
        self.ff = nn.Sequential(nn.Linear(self.d_model, self.d_model), nn.ReLU())
        self.ln2 = nn.LayerNorm(self.d_model)

    def forward(self, x):
        x_identity = x
        x = self.attention(x)
        z = self.ln1(x + x_identity)

        z_identity = z
        z = self.ff(z)
        z = self.ln2(z + z_identity)

        return z


class AnomalyTransformer(nn.Module):
    def __init__(self, N, d_model, layers, lambda_):
        super().__init__()
        self.N = N
        self.d_model = d_model

        self.blocks = nn.ModuleList([AnomalyTransformerBlock(self.N, self.d_model) for _ in range(layers)])
        self.output = None
        self.lambda_ = lambda_

        self.P_layers = []
        self.S_layers = []

    def forward(self, x):
        self.P_layers = []
        self.S_layers = []
        for idx, block in enumerate(self.blocks):
            x = block(x)
            self.P_layers.append(block.attention.P)
            self.S_layers.append(block.attention.S)

        self.output = x
        return x

    def layer_association_discrepancy(self, Pl, Sl, x):
        rowwise_kl = lambda row: (
            F.kl_div(Pl[row, :], Sl[row, :], reduction="batchmean")
            + F.kl_div(Sl[row, :], Pl[row, :], reduction="batchmean")
        )
        ad_vector = torch.concat([rowwise_kl(row).unsqueeze(0) for row in range(Pl.shape[0])])
        return ad_vector

    def association_discrepancy(self, P_list, S_list, x):
        return (1 / len(P_list)) * sum(
            [self.layer_association_discrepancy(P, S, x) for P, S in zip(P_list, S_list)]
        )

    def loss_function(self, x_hat, P_list, S_list, lambda_, x):
        frob_norm = torch.linalg.matrix_norm(x_hat - x, ord="fro")
        return frob_norm - (lambda_ * torch.linalg.norm(self.association_discrepancy(P_list, S_list, x), ord=1))

    def min_loss(self, x):
        P_list = self.P_layers
        S_list = [S.detach() for S in self.S_layers]
        lambda_ = -self.lambda_
        return self.loss_function(self.output, P_list, S_list, lambda_, x)

    def max_loss(self, x):
        P_list = [P.detach() for P in self.P_layers]
        S_list = self.S_layers
        lambda_ = self.lambda_
        return self.loss_function(self.output, P_list, S_list, lambda_, x)


def get_cosine_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps):
    def lr_lambda(step):
        if step < num_warmup_steps:
            return float(step + 1) / float(max(1, num_warmup_steps))
        progress = float(step - num_warmup_steps) / float(max(1, num_training_steps - num_warmup_steps))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)


def make_windows(n_windows):
    t = torch.arange(n_windows * N, dtype=torch.float32)
    base = torch.stack([torch.sin(t / (2.0 + c)) for c in range(D_MODEL)], dim=1)
    data = base + 0.1 * torch.randn(n_windows * N, D_MODEL)
    return list(data.view(n_windows, N, D_MODEL))


def train(model, train_data, epochs=2, lr=1e-3, max_grad_norm=1.0):
    total_steps = len(train_data) * epochs
    warmup_steps = max(int(total_steps * 0.1), 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, eps=1e-8)
    scheduler = get_cosine_schedule_with_warmup(optimizer, warmup_steps, total_steps)

    num_steps = 0
    model.train()
    for epoch in range(epochs):
        model.zero_grad()
        for step, batch in enumerate(train_data):
            outputs = model(batch)
            min_loss = model.min_loss(batch)
            max_loss = model.max_loss(batch)
            (min_loss - max_loss).backward()

            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            optimizer.step()
            scheduler.step()
            model.zero_grad()

            num_steps += 1
            if num_steps % 5 == 0:
                print(f"step {num_steps}: min_loss {min_loss.item():.4f} max_loss {max_loss.item():.4f}")


def main():
    train_data = make_windows(10)
    model = AnomalyTransformer(N, D_MODEL, LAYERS, LAMBDA)
    train(model, train_data)


if __name__ == "__main__":
    main()
