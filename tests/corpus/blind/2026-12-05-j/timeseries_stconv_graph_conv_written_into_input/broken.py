"""Traffic forecasting with a spatio-temporal graph convolutional network (STGCN, STConv blocks).

Source: https://github.com/benedekrozemberczki/pytorch_geometric_temporal/issues/57

The author stacks two STConv blocks (temporal gated convolution -> Chebyshev-style graph
convolution applied to every (batch, time step) slice -> temporal convolution -> batch norm)
and trains them with a linear read-out to predict the next step of sensor readings on a road
graph, with Adam and an MSE loss over mini-batches of sliding windows.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_NODES, N_STEPS, IN_CHANNELS = 12, 8, 2
BATCH_SIZE, N_WINDOWS, EPOCHS = 4, 16, 2


def road_graph(n):
    a = (torch.rand(n, n) < 0.25).float()
    a = ((a + a.t()) > 0).float()
    a.fill_diagonal_(0.0)
    deg = a.sum(1).clamp(min=1.0)
    d = deg.pow(-0.5)
    lap = torch.eye(n) - d[:, None] * a * d[None, :]
    return lap - torch.eye(n)  # scaled Laplacian (lambda_max ~ 2)


class TemporalConv(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv_1 = nn.Conv2d(in_channels, out_channels, (1, kernel_size))
        self.conv_2 = nn.Conv2d(in_channels, out_channels, (1, kernel_size))
        self.conv_3 = nn.Conv2d(in_channels, out_channels, (1, kernel_size))

    def forward(self, X):
        # X: (batch, time, nodes, channels)
        X = X.permute(0, 3, 2, 1)
        P = self.conv_1(X)
        Q = torch.sigmoid(self.conv_2(X))
        H = F.relu(P * Q + self.conv_3(X))
        return H.permute(0, 3, 2, 1)


class ChebGraphConv(nn.Module):
    def __init__(self, in_channels, out_channels, K, lap):
        super().__init__()
        self.lins = nn.ModuleList([nn.Linear(in_channels, out_channels, bias=False) for _ in range(K)])
        self.bias = nn.Parameter(torch.zeros(out_channels))
        self.register_buffer("lap", lap)

    def forward(self, x):
        # x: (nodes, channels)
        Tx_0, out = x, self.lins[0](x)
        if len(self.lins) > 1:
            Tx_1 = self.lap @ x
            out = out + self.lins[1](Tx_1)
            for lin in self.lins[2:]:
                Tx_2 = 2 * (self.lap @ Tx_1) - Tx_0
                out = out + lin(Tx_2)
                Tx_0, Tx_1 = Tx_1, Tx_2
        return out + self.bias


class STConv(nn.Module):
    def __init__(self, num_nodes, in_channels, hidden_channels, out_channels, kernel_size, K, lap):
        super().__init__()
        self._temporal_conv1 = TemporalConv(in_channels, hidden_channels, kernel_size)
        self._graph_conv = ChebGraphConv(hidden_channels, hidden_channels, K, lap)
        self._temporal_conv2 = TemporalConv(hidden_channels, out_channels, kernel_size)
        self._batch_norm = nn.BatchNorm2d(num_nodes)

    def forward(self, X):
        T = self._temporal_conv1(X)
        for b in range(T.size(0)):
            for t in range(T.size(1)):
                T[b][t] = self._graph_conv(T[b][t])
        T = F.relu(T)
        T = self._temporal_conv2(T)
        T = T.permute(0, 2, 1, 3)
        T = self._batch_norm(T)
        return T.permute(0, 2, 1, 3)


class TrafficForecaster(nn.Module):
    def __init__(self, lap):
        super().__init__()
        self.block1 = STConv(N_NODES, IN_CHANNELS, 16, 16, kernel_size=2, K=3, lap=lap)
        self.block2 = STConv(N_NODES, 16, 16, 8, kernel_size=2, K=3, lap=lap)
        self.head = nn.Linear(8 * (N_STEPS - 4), 1)

    def forward(self, X):
        h = self.block2(self.block1(X))
        h = h.permute(0, 2, 1, 3).reshape(X.size(0), N_NODES, -1)
        return self.head(h).squeeze(-1)


lap = road_graph(N_NODES)
series = torch.randn(N_WINDOWS + N_STEPS + 1, N_NODES, IN_CHANNELS).cumsum(0) * 0.1
windows = torch.stack([series[i : i + N_STEPS] for i in range(N_WINDOWS)])
targets = torch.stack([series[i + N_STEPS, :, 0] for i in range(N_WINDOWS)])

model = TrafficForecaster(lap)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(EPOCHS):
    for start in range(0, N_WINDOWS, BATCH_SIZE):
        X, y = windows[start : start + BATCH_SIZE], targets[start : start + BATCH_SIZE]
        optimizer.zero_grad()
        loss = F.mse_loss(model(X), y)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: mse {loss.item():.4f}")
