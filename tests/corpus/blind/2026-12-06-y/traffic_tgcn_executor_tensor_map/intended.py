"""T-GCN traffic-speed forecasting on a synthetic ring-road sensor graph. The
graph convolution is a hand-written "compiled kernel": a custom autograd Function
whose forward runs the fused transform + normalised neighbour sum and whose
backward is replayed by a small executor from the tensors it kept, as in the
Seastar/STGraph vertex-centric executor.

Reduced from https://github.com/bfGraph/STGraph/issues/4 ("Unable to Train TGCN
model due to double backprop runtime error"): the executor kept the tensors each
kernel's backward needs in a map keyed by the kernel's id, so every call of a GCN
layer overwrote the previous call's entry. A TGCN cell calls its three GCN layers
once per snapshot and the loss is summed over the snapshots before one backward;
the backward of every snapshot but the last then replayed the last snapshot's
already-freed graph: "Trying to backward through the graph a second time". The
fix (STGraph commit "Updated executor with (id,stack<tensor>) structure") keeps a
stack per kernel id: forward pushes, backward pops.
"""
import itertools
import math

import torch
import torch.nn as nn

torch.manual_seed(0)

N_NODES, N_SNAPSHOTS, N_LAGS, HIDDEN, EPOCHS = 24, 30, 4, 16, 15


class Executor:
    """Holds, per kernel id, a stack of the tensors the kernel's backward program reads."""

    def __init__(self):
        self.tensor_map = {}

    def save(self, kernel_id, tensors):
        self.tensor_map.setdefault(kernel_id, []).append(tensors)

    def load(self, kernel_id):
        return self.tensor_map[kernel_id].pop()


EXECUTOR = Executor()
_kernel_ids = itertools.count()


class GCNKernel(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, graph, kernel_id):
        ctx.kernel_id = kernel_id
        with torch.enable_grad():
            x_in = x.detach().requires_grad_(x.requires_grad)
            w_in = weight.detach().requires_grad_(True)
            h = (x_in @ w_in) * graph["norm"].unsqueeze(-1)
            msg = h[graph["src"]] * graph["weight"].unsqueeze(-1)
            out = torch.zeros_like(h).index_add(0, graph["dst"], msg) * graph["norm"].unsqueeze(-1)
        EXECUTOR.save(kernel_id, (x_in, w_in, out))
        return out.detach()

    @staticmethod
    def backward(ctx, grad_out):
        x_in, w_in, out = EXECUTOR.load(ctx.kernel_id)
        inputs = (x_in, w_in) if x_in.requires_grad else (w_in,)
        grads = torch.autograd.grad(out, inputs, grad_out)
        grad_x = grads[0] if x_in.requires_grad else None
        return grad_x, grads[-1], None, None


class GCNLayer(nn.Module):
    def __init__(self, graph, in_feats, out_feats):
        super().__init__()
        self.graph = graph
        self.kernel_id = next(_kernel_ids)
        self.weight = nn.Parameter(torch.randn(in_feats, out_feats) / math.sqrt(in_feats))
        self.bias = nn.Parameter(torch.zeros(out_feats))

    def forward(self, x):
        return GCNKernel.apply(x, self.weight, self.graph, self.kernel_id) + self.bias


class TGCNCell(nn.Module):
    def __init__(self, graph, in_channels, out_channels):
        super().__init__()
        self.out_channels = out_channels
        self.conv_z = GCNLayer(graph, in_channels, out_channels)
        self.linear_z = nn.Linear(2 * out_channels, out_channels)
        self.conv_r = GCNLayer(graph, in_channels, out_channels)
        self.linear_r = nn.Linear(2 * out_channels, out_channels)
        self.conv_h = GCNLayer(graph, in_channels, out_channels)
        self.linear_h = nn.Linear(2 * out_channels, out_channels)

    def forward(self, x, h=None):
        if h is None:
            h = torch.zeros(x.shape[0], self.out_channels)
        z = torch.sigmoid(self.linear_z(torch.cat([self.conv_z(x), h], dim=-1)))
        r = torch.sigmoid(self.linear_r(torch.cat([self.conv_r(x), h], dim=-1)))
        h_tilde = torch.tanh(self.linear_h(torch.cat([self.conv_h(x), h * r], dim=-1)))
        return z * h + (1 - z) * h_tilde


class TGCN(nn.Module):
    def __init__(self, graph, node_features, hidden):
        super().__init__()
        self.cell = TGCNCell(graph, node_features, hidden)
        self.readout = nn.Linear(hidden, 1)

    def forward(self, x, h=None):
        h = self.cell(x, h)
        return self.readout(torch.relu(h)).squeeze(-1), h


def ring_road_graph(n):
    src = torch.arange(n)
    ramps = torch.randint(0, n, (n // 4, 2))
    pairs = torch.cat([torch.stack([src, (src + 1) % n], 1), torch.stack([src, (src - 1) % n], 1), ramps, ramps.flip(1)])
    pairs = torch.cat([pairs, torch.stack([src, src], 1)])  # self loops
    weight = 0.5 + torch.rand(pairs.shape[0])
    deg = torch.zeros(n).index_add(0, pairs[:, 1], torch.ones(pairs.shape[0]))
    return {"src": pairs[:, 0], "dst": pairs[:, 1], "weight": weight, "norm": deg.pow(-0.5)}


def traffic_speeds(graph, n_steps):
    t = torch.arange(n_steps + N_LAGS + 1).float()
    phase = torch.rand(N_NODES) * 2 * math.pi
    speed = 60 + 15 * torch.sin(2 * math.pi * t[:, None] / 24 + phase[None, :])
    speed = speed + 3 * torch.randn_like(speed)
    speed = (speed - speed.mean()) / speed.std()
    features = torch.stack([speed[i:i + N_LAGS].T for i in range(n_steps)])  # (T, N, lags)
    targets = speed[N_LAGS:N_LAGS + n_steps]  # (T, N)
    return features, targets


graph = ring_road_graph(N_NODES)
features, targets = traffic_speeds(graph, N_SNAPSHOTS)
model = TGCN(graph, N_LAGS, HIDDEN)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

for epoch in range(EPOCHS):
    model.train()
    cost = 0
    hidden_state = None
    optimizer.zero_grad()
    for index in range(N_SNAPSHOTS):
        y_hat, hidden_state = model(features[index], hidden_state)
        cost = cost + torch.mean((y_hat - targets[index]) ** 2)
    cost = cost / (index + 1)
    cost.backward()
    optimizer.step()
    if epoch % 5 == 0:
        print(f"epoch {epoch:3d}  MSE {cost.item():.4f}")
