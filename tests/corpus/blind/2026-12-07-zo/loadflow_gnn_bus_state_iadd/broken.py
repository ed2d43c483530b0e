"""Graph neural load-flow solver for a small transmission grid.

Source: https://github.com/vgsatorras/egnn/issues/3 -- in the EGNN reference code
``coord_model`` ended with ``coord += agg``; a user who reused the layer in another
project hit "one of the variables needed for gradient computation has been modified
by an inplace operation", and it went away with ``coord = coord + agg`` (the
maintainer changed the line to that).

Here the same layer shape updates the per-bus state (voltage magnitude and angle)
of a learned load-flow solver: each message-passing round gates its update with a
small network that reads the current bus state, then adds the aggregated branch
messages to the state.  Synthetic 14-bus grids, supervised with solved voltages and
a power-mismatch penalty.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

CFG = {
    "n_bus": 14,
    "n_grids": 16,
    "hidden": 32,
    "rounds": 3,
    "lr": 2e-3,
    "epochs": 2,
    "mismatch_weight": 0.1,
}


def make_grid_topology(n_bus):
    # radial backbone plus a few meshed lines
    src = list(range(1, n_bus))
    dst = [torch.randint(0, i, (1,)).item() for i in range(1, n_bus)]
    for _ in range(4):
        a, b = torch.randint(0, n_bus, (2,)).tolist()
        if a != b:
            src.append(a)
            dst.append(b)
    row = torch.tensor(src + dst)
    col = torch.tensor(dst + src)
    return torch.stack([row, col])


def make_dataset(cfg):
    edge_index = make_grid_topology(cfg["n_bus"])
    n_edges = edge_index.size(1)
    samples = []
    for _ in range(cfg["n_grids"]):
        p_load = torch.rand(cfg["n_bus"]) * 0.8
        q_load = torch.rand(cfg["n_bus"]) * 0.3
        bus_type = torch.zeros(cfg["n_bus"])
        bus_type[0] = 1.0  # slack
        node_x = torch.stack([p_load, q_load, bus_type], dim=1)
        line_y = 0.5 + torch.rand(n_edges, 1)
        v_mag = 1.0 - 0.05 * p_load + 0.01 * torch.randn(cfg["n_bus"])
        v_ang = -0.1 * p_load.cumsum(0) / cfg["n_bus"]
        target = torch.stack([v_mag, v_ang], dim=1)
        samples.append((node_x, line_y, target))
    return edge_index, samples


class BranchRound(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.msg = nn.Sequential(nn.Linear(2 * 3 + 2 + 1, hidden), nn.SiLU(), nn.Linear(hidden, 2))
        self.gate = nn.Sequential(nn.Linear(2, hidden), nn.Tanh(), nn.Linear(hidden, 2))

    def forward(self, node_x, state, edge_index, line_y):
        row, col = edge_index
        diff = state[row] - state[col]
        m = self.msg(torch.cat([node_x[row], node_x[col], diff, line_y], dim=-1))
        agg = torch.zeros_like(state).index_add_(0, row, m)
        g = torch.sigmoid(self.gate(state))
        state += g * agg
        return state


class LoadFlowSolver(nn.Module):
    def __init__(self, hidden, rounds):
        super().__init__()
        self.rounds = nn.ModuleList([BranchRound(hidden) for _ in range(rounds)])

    def forward(self, node_x, edge_index, line_y):
        n = node_x.size(0)
        state = torch.stack([torch.ones(n), torch.zeros(n)], dim=1)  # flat start
        for rnd in self.rounds:
            state = rnd(node_x, state, edge_index, line_y)
        return state


def power_mismatch(state, node_x, edge_index, line_y):
    row, col = edge_index
    flow = line_y.squeeze(-1) * state[row, 0] * state[col, 0] * torch.sin(state[row, 1] - state[col, 1])
    p_inj = torch.zeros(state.size(0)).index_add_(0, row, flow)
    return ((p_inj + node_x[:, 0]) ** 2).mean()


def train(cfg):
    edge_index, samples = make_dataset(cfg)
    solver = LoadFlowSolver(cfg["hidden"], cfg["rounds"])
    solver_opt = torch.optim.Adam(solver.parameters(), lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        running = 0.0
        for node_x, line_y, target in samples:
            pred = solver(node_x, edge_index, line_y)
            flow_loss = F.mse_loss(pred, target) + cfg["mismatch_weight"] * power_mismatch(
                pred, node_x, edge_index, line_y
            )
            solver_opt.zero_grad()
            flow_loss.backward()
            solver_opt.step()
            running += flow_loss.item()
        print(f"epoch {epoch}: loss {running / len(samples):.4f}")


if __name__ == "__main__":
    train(CFG)
