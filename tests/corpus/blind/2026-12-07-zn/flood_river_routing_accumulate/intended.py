"""Flood forecasting on a river network: a rainfall-runoff LSTM per sub-catchment, then learned routing.

Reduced from https://github.com/nkolot/GraphCMR/issues/19: SMPL's forward kinematics fills the
global transforms of a kinematic tree in place, ``G[:, i] = torch.matmul(G[:, parent[i]], G_[:, i])``,
reading each parent's slice of the same tensor it writes into.  The product saves the parent's
slice (a view of ``G``) for backward, the next assignment bumps ``G``'s version, and the backward
fails with "one of the variables needed for gradient computation has been modified by an
inplace operation".  Here the tree is a river network walked from the headwaters down to the
outlet: each reach's discharge is its own runoff plus the discharge of the reach upstream,
attenuated and lagged by learned routing coefficients, written into one preallocated tensor.
The training setting (CAMELS-like synthetic sub-catchments, NSE-style loss at gauged reaches)
is the writer's; the in-place accumulation along the tree is the report's.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)

# sub-catchment i drains into reach i; UPSTREAM[i] is the reach feeding it (-1: headwater).
# listed from the headwaters to the outlet, so an upstream reach always comes first.
UPSTREAM = [-1, 0, -1, 2, 1, 4, 5]
GAUGED = [1, 4, 6]           # reaches with a discharge gauge
N_REACH = len(UPSTREAM)
T = 48                        # days in a training window
N_FORCING = 3                 # precipitation, temperature, PET
N_STATIC = 4                  # area, slope, forest fraction, aridity


def make_basin_batch(batch):
    forcing = torch.rand(batch, N_REACH, T, N_FORCING)
    static = torch.rand(N_REACH, N_STATIC)
    runoff = forcing[..., 0].cumsum(-1) * 0.05 * (1 + static[:, 0:1])
    q_obs = runoff.clone()
    for i, up in enumerate(UPSTREAM):
        if up >= 0:
            q_obs[:, i] = q_obs[:, i] + 0.8 * q_obs[:, up]
    return forcing, static, q_obs[:, GAUGED] + 0.05 * torch.randn(batch, len(GAUGED), T)


class RunoffLSTM(nn.Module):
    """One LSTM shared by all sub-catchments, static attributes appended to every time step."""

    def __init__(self, hidden=32):
        super().__init__()
        self.lstm = nn.LSTM(N_FORCING + N_STATIC, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, forcing, static):
        b = forcing.shape[0]
        x = torch.cat([forcing, static[None, :, None, :].expand(b, -1, T, -1)], dim=-1)
        out, _ = self.lstm(x.reshape(b * N_REACH, T, -1))
        return nn.functional.softplus(self.head(out)).reshape(b, N_REACH, T)


class TreeRouting(nn.Module):
    """Discharge accumulated down the network: q[i] = runoff[i] + lag(k_i * q[upstream[i]])."""

    def __init__(self):
        super().__init__()
        self.k = nn.Parameter(torch.full((N_REACH,), 0.5))
        self.lag_w = nn.Parameter(torch.tensor([0.6, 0.3, 0.1]))

    def lag(self, q):
        w = torch.softmax(self.lag_w, 0)
        padded = nn.functional.pad(q, (2, 0))
        return w[0] * padded[:, 2:] + w[1] * padded[:, 1:-1] + w[2] * padded[:, :-2]

    def forward(self, runoff):
        reaches = []
        for i, up in enumerate(UPSTREAM):
            if up >= 0:
                reaches.append(runoff[:, i] + self.lag(self.k[i] * reaches[up]))
            else:
                reaches.append(runoff[:, i])
        return torch.stack(reaches, dim=1)


def nse_loss(q_sim, q_obs):
    num = ((q_sim - q_obs) ** 2).sum(-1)
    den = ((q_obs - q_obs.mean(-1, keepdim=True)) ** 2).sum(-1) + 0.1
    return (num / den).mean()


runoff_model = RunoffLSTM()
routing = TreeRouting()
optimizer = torch.optim.Adam(list(runoff_model.parameters()) + list(routing.parameters()), lr=1e-3)

for step in range(4):
    forcing, static, q_obs = make_basin_batch(batch=4)
    runoff = runoff_model(forcing, static)
    q_sim = routing(runoff)
    loss = nse_loss(q_sim[:, GAUGED], q_obs)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: NSE loss {loss.item():.4f}")
