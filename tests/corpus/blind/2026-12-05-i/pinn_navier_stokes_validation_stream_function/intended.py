"""Physics-informed neural network for 2-D Navier-Stokes flow (Raissi-style stream function).

Reduced from https://github.com/rezaakb/pinns-torch/issues/12: the author ran the package's
Navier-Stokes example from a notebook, building the Lightning-style trainer by hand instead of
from the Hydra configuration. The network predicts (psi, p); the velocities are the output
function u = dpsi/dy, v = -dpsi/dx, taken with autograd in both the training and the validation
step. A small hand-written Trainer stands in for Lightning's (same defaults); synthetic
flow data, Adam, CPU.
"""

import torch
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self, layers=(3, 32, 32, 2)):
        super().__init__()
        mods = []
        for a, b in zip(layers[:-1], layers[1:]):
            mods += [nn.Linear(a, b), nn.Tanh()]
        self.net = nn.Sequential(*mods[:-1])

    def forward(self, x, y, t):
        return self.net(torch.cat([x, y, t], dim=1))


class NavierStokesPINN(nn.Module):
    def __init__(self, lambda_1=1.0, lambda_2=0.01):
        super().__init__()
        self.net = MLP()
        self.lambda_1 = nn.Parameter(torch.tensor([lambda_1]))
        self.lambda_2 = nn.Parameter(torch.tensor([lambda_2]))

    @staticmethod
    def gradient(out, inp):
        return torch.autograd.grad(out, inp, grad_outputs=torch.ones_like(out), create_graph=True)[0]

    def output_fn(self, x, y, t):
        """(u, v, p) from the network's (psi, p): the velocities are derivatives of psi."""
        out = self.net(x, y, t)
        psi, p = out[:, 0:1], out[:, 1:2]
        u = self.gradient(psi, y)
        v = -self.gradient(psi, x)
        return u, v, p

    def pde_residual(self, x, y, t, u, v, p):
        u_t, u_x, u_y = self.gradient(u, t), self.gradient(u, x), self.gradient(u, y)
        v_t, v_x, v_y = self.gradient(v, t), self.gradient(v, x), self.gradient(v, y)
        p_x, p_y = self.gradient(p, x), self.gradient(p, y)
        u_xx, u_yy = self.gradient(u_x, x), self.gradient(u_y, y)
        v_xx, v_yy = self.gradient(v_x, x), self.gradient(v_y, y)
        f_u = u_t + self.lambda_1 * (u * u_x + v * u_y) + p_x - self.lambda_2 * (u_xx + u_yy)
        f_v = v_t + self.lambda_1 * (u * v_x + v * v_y) + p_y - self.lambda_2 * (v_xx + v_yy)
        return f_u, f_v

    def training_step(self, batch):
        x, y, t, u_obs, v_obs = (c.clone().requires_grad_(True) for c in batch)
        u, v, p = self.output_fn(x, y, t)
        f_u, f_v = self.pde_residual(x, y, t, u, v, p)
        return ((u - u_obs) ** 2).mean() + ((v - v_obs) ** 2).mean() + (f_u**2).mean() + (f_v**2).mean()

    def validation_step(self, batch):
        x, y, t, u_obs, v_obs = batch
        with torch.enable_grad():
            x = x.clone().requires_grad_(True)
            y = y.clone().requires_grad_(True)
            u, v, _ = self.output_fn(x, y, t)
        return (torch.linalg.norm(u - u_obs) / torch.linalg.norm(u_obs)).item()


class Trainer:
    """The bits of lightning.Trainer this example uses (same defaults)."""

    def __init__(self, max_epochs, check_val_every_n_epoch=1, inference_mode=True):
        self.max_epochs = max_epochs
        self.check_val_every_n_epoch = check_val_every_n_epoch
        self.inference_mode = inference_mode

    def fit(self, module, optimizer, train_batches, val_batch):
        for epoch in range(self.max_epochs):
            module.train()
            for batch in train_batches:
                optimizer.zero_grad()
                loss = module.training_step(batch)
                loss.backward()
                optimizer.step()
            if (epoch + 1) % self.check_val_every_n_epoch == 0:
                module.eval()
                ctx = torch.inference_mode() if self.inference_mode else torch.no_grad()
                with ctx:
                    err = module.validation_step(val_batch)
                print(f"epoch {epoch}: loss {loss.item():.4f}, val rel. error u {err:.4f}")


def make_flow(n):
    x, y, t = torch.rand(n, 1) * 2 - 1, torch.rand(n, 1) * 2 - 1, torch.rand(n, 1)
    u = torch.sin(torch.pi * y) * torch.exp(-t)
    v = -torch.sin(torch.pi * x) * torch.exp(-t)
    return x, y, t, u, v


def main():
    torch.manual_seed(0)
    data = make_flow(128)
    train_batches = [tuple(c[i : i + 64] for c in data) for i in (0, 64)]
    val_batch = make_flow(64)

    model = NavierStokesPINN()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    trainer = Trainer(max_epochs=4, inference_mode=False)
    trainer.fit(model, optimizer, train_batches, val_batch)


if __name__ == "__main__":
    main()
