"""End-to-end portfolio allocation from asset-return windows (deepdow layout, BachelierNet).

Source: https://github.com/jankrepl/deepdow/pull/147

The author ran deepdow's end-to-end example with BachelierNet on CPU: a
network reads a lookback window of returns for every asset, normalises it
(instance norm), estimates a shrunk covariance matrix of the normalised
returns, predicts expected returns with a per-asset GRU and an attention
collapse over time, and turns both into portfolio weights with a Markowitz
style allocation layer. The loss is the negative mean portfolio return over the
next horizon. Reduced: synthetic returns, a closed-form allocator instead of
the convex-optimisation layer.
"""

import torch
import torch.nn as nn

N_ASSETS = 6
LOOKBACK = 12
HORIZON = 3
N_SAMPLES = 64
BATCH = 8
HIDDEN = 8


class CovarianceMatrix(nn.Module):
    """Covariance matrix of every sample, shrunk toward its diagonal."""

    def __init__(self, shrinkage_coef=0.5):
        super().__init__()
        self.shrinkage_coef = shrinkage_coef

    def forward(self, x):
        # x: (n_samples, lookback, n_assets)
        n_samples = x.shape[0]
        return torch.stack(
            [self.compute_covariance(x[i].T, shrinkage_coef=self.shrinkage_coef) for i in range(n_samples)], dim=0
        )

    @staticmethod
    def compute_covariance(m, shrinkage_coef=0.5):
        fact = 1.0 / (m.size(1) - 1)
        m = m - torch.mean(m, dim=1, keepdim=True)
        mt = m.t()
        s = fact * m.matmul(mt)  # sample covariance matrix
        s += torch.eye(len(s), dtype=s.dtype) * 0.001  # prevent numerical issues
        diagonal = torch.diag(torch.diag(s))
        return shrinkage_coef * s + (1 - shrinkage_coef) * diagonal


class RNN(nn.Module):
    """A GRU run over the lookback of every asset separately."""

    def __init__(self, n_channels, hidden_size):
        super().__init__()
        self.cell = nn.GRU(n_channels, hidden_size, batch_first=True)

    def forward(self, x):
        # x: (n_samples, n_channels, lookback, n_assets) -> (n_samples, hidden, lookback, n_assets)
        n_samples, n_channels, lookback, n_assets = x.shape
        outs = []
        for a in range(n_assets):
            out, _ = self.cell(x[..., a].permute(0, 2, 1))
            outs.append(out.permute(0, 2, 1))
        return torch.stack(outs, dim=-1)


class AttentionCollapse(nn.Module):
    def __init__(self, n_channels):
        super().__init__()
        self.affine = nn.Linear(n_channels, n_channels)
        self.context_vector = nn.Linear(n_channels, 1, bias=False)

    def forward(self, x):
        # x: (n_samples, n_channels, lookback, n_assets) -> (n_samples, n_channels, n_assets)
        res_list = []
        for i in range(x.shape[0]):
            inp_single = x[i].permute(2, 1, 0)  # (n_assets, lookback, n_channels)
            tformed = torch.tanh(self.affine(inp_single))
            w = torch.softmax(self.context_vector(tformed), dim=1)  # (n_assets, lookback, 1)
            res_list.append((inp_single * w).sum(dim=1).T)
        return torch.stack(res_list, dim=0)


class AnalyticalMarkowitz(nn.Module):
    """Closed-form mean-variance weights, made long-only with a softmax."""

    def forward(self, covmat, rets):
        w = torch.linalg.solve(covmat, rets.unsqueeze(-1)).squeeze(-1)
        return torch.softmax(w, dim=1)


class BachelierNet(nn.Module):
    def __init__(self, n_input_channels, n_assets, hidden_size=HIDDEN):
        super().__init__()
        self.norm_layer = nn.InstanceNorm2d(n_input_channels, affine=True)
        self.transform_layer = RNN(n_input_channels, hidden_size)
        self.dropout_layer = nn.Dropout(p=0.2)
        self.time_collapse_layer = AttentionCollapse(hidden_size)
        self.covariance_layer = CovarianceMatrix(shrinkage_coef=0.5)
        self.channel_collapse = nn.Linear(hidden_size, 1)
        self.portfolio_opt_layer = AnalyticalMarkowitz()

    def forward(self, x):
        x = self.norm_layer(x)
        rets = x[:, 0, :, :]
        covmat = self.covariance_layer(rets)

        x = self.transform_layer(x)
        x = self.dropout_layer(x)
        x = self.time_collapse_layer(x)  # (n_samples, hidden, n_assets)
        exp_rets = self.channel_collapse(x.permute(0, 2, 1)).squeeze(-1)  # (n_samples, n_assets)
        return self.portfolio_opt_layer(covmat, exp_rets)


class MeanReturns(nn.Module):
    def forward(self, weights, y):
        # y: (n_samples, n_channels, horizon, n_assets); channel 0 holds simple returns
        portfolio = (y[:, 0, :, :] * weights.unsqueeze(1)).sum(dim=-1)
        return -portfolio.mean()


def make_dataset():
    drift = torch.linspace(-0.002, 0.004, N_ASSETS)
    returns = drift + 0.02 * torch.randn(N_SAMPLES + LOOKBACK + HORIZON, N_ASSETS)
    X = torch.stack([returns[i : i + LOOKBACK] for i in range(N_SAMPLES)]).unsqueeze(1)
    y = torch.stack([returns[i + LOOKBACK : i + LOOKBACK + HORIZON] for i in range(N_SAMPLES)]).unsqueeze(1)
    return X, y


def main():
    torch.manual_seed(3)
    X, y = make_dataset()
    network = BachelierNet(n_input_channels=1, n_assets=N_ASSETS)
    loss_fn = MeanReturns()
    optimizer = torch.optim.Adam(network.parameters(), amsgrad=True, lr=1e-3)

    for epoch in range(2):
        perm = torch.randperm(N_SAMPLES)
        for b in range(0, N_SAMPLES, BATCH):
            idx = perm[b : b + BATCH]
            X_batch, y_batch = X[idx], y[idx]
            weights = network(X_batch)
            loss = loss_fn(weights, y_batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.5f}")


if __name__ == "__main__":
    main()
