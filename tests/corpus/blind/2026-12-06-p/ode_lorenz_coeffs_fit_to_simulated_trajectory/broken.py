"""Learning the coefficients of an ODE by differentiating through an RK4 solver (Lorenz 63).

Reduced from https://github.com/Rose-STL-Lab/torchTS/pull/134 ("Add ODE solver and examples"):
the author writes an ``ODESolver`` module whose ODE coefficients are ``nn.Parameter``s and
whose forward integrates the system with explicit Euler or RK4 steps. The example notebook
first simulates a Lorenz 63 trajectory with the known coefficients (sigma=10, rho=28,
beta=2.7), then fits a second solver started from random coefficients to that trajectory by
Adam on the MSE between the two simulations ("unobserved" training: the whole trajectory is
one batch, one optimizer step per epoch), with a MultiStepLR schedule.
"""

import torch
import torch.nn as nn

torch.manual_seed(0)


# Lorenz 63 equations
def x_prime(prev_val, coeffs):
    return coeffs["sigma"] * (prev_val["y"] - prev_val["x"])


def y_prime(prev_val, coeffs):
    return prev_val["x"] * (coeffs["rho"] - prev_val["z"]) - prev_val["y"]


def z_prime(prev_val, coeffs):
    return prev_val["x"] * prev_val["y"] - coeffs["beta"] * prev_val["z"]


class ODESolver(nn.Module):
    def __init__(self, ode, init_vars, init_coeffs, dt, solver="rk4"):
        super().__init__()
        for name, value in init_coeffs.items():
            self.register_parameter(name, nn.Parameter(torch.tensor(float(value))))
        self.ode = ode
        self.var_names = list(ode.keys())
        self.init_vars = {name: torch.tensor(float(value)) for name, value in init_vars.items()}
        self.coeffs = {name: param for name, param in self.named_parameters()}
        self.dt = dt
        self.step_solver = self._runge_kutta_4_step if solver == "rk4" else self._euler_step

    def _euler_step(self, prev_val):
        return {var: prev_val[var] + self.ode[var](prev_val, self.coeffs) * self.dt for var in self.var_names}

    def _runge_kutta_4_step(self, prev_val):
        k_1 = prev_val
        k_2 = {var: prev_val[var] + self.ode[var](k_1, self.coeffs) * 0.5 * self.dt for var in self.var_names}
        k_3 = {var: prev_val[var] + self.ode[var](k_2, self.coeffs) * 0.5 * self.dt for var in self.var_names}
        k_4 = {var: prev_val[var] + self.ode[var](k_3, self.coeffs) * self.dt for var in self.var_names}
        pred = {}
        for var in self.var_names:
            result = self.ode[var](k_1, self.coeffs) / 6
            result += self.ode[var](k_2, self.coeffs) / 3
            result += self.ode[var](k_3, self.coeffs) / 3
            result += self.ode[var](k_4, self.coeffs) / 6
            pred[var] = prev_val[var] + result * self.dt
        return pred

    def solver(self, nt):
        pred = {name: value.unsqueeze(0) for name, value in self.init_vars.items()}
        for n in range(nt - 1):
            prev_val = {var: pred[var][[n]] for var in self.var_names}
            new_val = self.step_solver(prev_val)
            for var in self.var_names:
                pred[var] = torch.cat([pred[var], new_val[var]])
        return torch.stack([pred[var] for var in self.var_names], dim=1)

    def forward(self, nt):
        return self.solver(nt)


ode = {"x": x_prime, "y": y_prime, "z": z_prime}
ode_init = {"x": 1, "y": 0, "z": 0}
ode_coeffs = {"sigma": 10.0, "rho": 28.0, "beta": 2.7}
NT = 60

# Simulate the ground-truth trajectory
ode_solver = ODESolver(ode=ode, init_vars=ode_init, init_coeffs=ode_coeffs, dt=0.01, solver="rk4")
result = ode_solver(NT)

# Fit a solver started from arbitrary coefficients
ode_train_coeffs = {"sigma": 20 * torch.rand(()), "rho": 20 * torch.rand(()), "beta": 20 * torch.rand(())}
ode_solver_train = ODESolver(ode=ode, init_vars=ode_init, init_coeffs=ode_train_coeffs, dt=0.01, solver="rk4")
optimizer = torch.optim.Adam(ode_solver_train.parameters(), lr=0.5)
scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[5], gamma=0.2)
criterion = nn.MSELoss()


def fit(model, x, y, max_epochs):
    for epoch in range(max_epochs):
        optimizer.zero_grad()
        predictions = model(x.shape[0])
        loss = criterion(predictions, y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}", {k: round(v.item(), 3) for k, v in model.coeffs.items()})


fit(ode_solver_train, result, result, max_epochs=10)
