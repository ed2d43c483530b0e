"""Drag-racing launch control: predict the 60-ft time and peak wheel slip of a launch from the car's setup.

Source: https://github.com/pytorch/pytorch/issues/8108 ("Gradients through MultivariateNormal distribution
log_prob behaving strangely"). The author built a MultivariateNormal from a covariance matrix that requires
grad and differentiated its log_prob more than once; the distribution factorises the covariance (a Cholesky
factor) once, in its constructor, so every log_prob shares that part of the graph (the issue's test3 passes
retain_graph=True to both gradient calls). This script learns a launch-outcome regressor together with a
heteroscedastic noise model: the run's MultivariateNormal is built once per epoch, before the batch loop,
and each batch backpropagates its negative log-likelihood through it.
"""
import torch
import torch.nn as nn
import torch.distributions as D

CFG = {"setup_dims": 7, "outcomes": 2, "hidden": 32, "passes": 96, "batch": 24, "epochs": 2, "lr": 3e-3}


class LaunchNet(nn.Module):
    """Setup (rpm, boost, tyre pressure, track temp, ...) -> (60-ft time, peak slip)."""

    def __init__(self, setup_dims, outcomes, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(setup_dims, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU())
        self.out = nn.Linear(hidden, outcomes)

    def forward(self, setup):
        return self.out(self.body(setup))


class SlipNoise(nn.Module):
    """Correlated measurement noise of the timing beam and the slip sensor."""

    def __init__(self, outcomes):
        super().__init__()
        self.log_scale = nn.Parameter(torch.zeros(outcomes))
        self.corr = nn.Parameter(torch.zeros(1))

    def covariance(self):
        s = self.log_scale.exp()
        rho = torch.tanh(self.corr)
        off = rho * s[0] * s[1]
        return torch.stack([torch.stack([s[0] ** 2, off[0]]), torch.stack([off[0], s[1] ** 2])])

    def distribution(self):
        return D.MultivariateNormal(torch.zeros(2), covariance_matrix=self.covariance() + 1e-4 * torch.eye(2))


def dyno_log(n, dims):
    setup = torch.randn(n, dims)
    sixty = 1.1 + 0.08 * setup[:, 0] - 0.05 * setup[:, 1] + 0.03 * setup[:, 2] * setup[:, 3]
    slip = 0.12 + 0.06 * torch.relu(setup[:, 1]) - 0.04 * setup[:, 4]
    outcome = torch.stack([sixty, slip], 1)
    return setup, outcome + 0.02 * torch.randn(n, 2)


def run_epoch(launch_net, slip_noise, launch_opt, setup, outcome):
    noise = slip_noise.distribution()
    for i in range(0, setup.shape[0], CFG["batch"]):
        x, y = setup[i:i + CFG["batch"]], outcome[i:i + CFG["batch"]]
        launch_opt.zero_grad()
        residual = y - launch_net(x)
        nll = -noise.log_prob(residual).mean()
        nll.backward()
        launch_opt.step()
    return nll.item()


def main():
    torch.manual_seed(440)
    setup, outcome = dyno_log(CFG["passes"], CFG["setup_dims"])
    launch_net = LaunchNet(CFG["setup_dims"], CFG["outcomes"], CFG["hidden"])
    slip_noise = SlipNoise(CFG["outcomes"])
    launch_opt = torch.optim.Adam(list(launch_net.parameters()) + list(slip_noise.parameters()), lr=CFG["lr"])
    for epoch in range(CFG["epochs"]):
        print(f"epoch {epoch}: nll {run_epoch(launch_net, slip_noise, launch_opt, setup, outcome):.4f}")


if __name__ == "__main__":
    main()
