"""Termite-mound ventilation: predict the airflow through a mound's vents from chamber temperatures and wind.

Source: https://stackoverflow.com/questions/54754153/autograd-grad-for-tensor-in-pytorch/54757383 ("Autograd.grad()
for Tensor in pytorch"). The asker wanted a new loss built from the gradient of a network's output Y (batch x n)
with respect to its input X, as ``tf.gradients(ys=Y, xs=X)`` gives, and got "grad can be implicitly created only
for scalar outputs" from ``torch.autograd.grad(outputs=Y, inputs=X)``. The accepted answer passes
``grad_outputs=torch.ones_like(Y)``. This script adds that kind of term to a surrogate of mound ventilation:
the stack effect says vent airflow must not fall when the nest is warmer than the outside air, so the loss
penalises a negative derivative of predicted flow with respect to the temperature difference.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

OPTS = {"inputs": 6, "vents": 3, "hidden": 40, "mounds": 72, "batch": 18, "epochs": 2, "lr": 2e-3}


class VentSurrogate(nn.Module):
    """(nest-minus-air temperature, wind speed, wind direction sin/cos, CO2, humidity) -> flow at 3 vents."""

    def __init__(self, inputs, vents, hidden):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(inputs, hidden), nn.Softplus(),
            nn.Linear(hidden, hidden), nn.Softplus(),
            nn.Linear(hidden, vents),
        )

    def forward(self, conditions):
        return self.net(conditions)


def field_readings(n, inputs, vents):
    cond = torch.randn(n, inputs)
    stack = 0.5 * F.softplus(cond[:, :1])
    wind = 0.3 * cond[:, 1:2] * torch.stack([cond[:, 2], cond[:, 3], -cond[:, 2]], 1)
    flow = stack + wind + 0.05 * torch.randn(n, vents)
    return cond, flow


def stack_effect_penalty(flow, conditions):
    d_flow = torch.autograd.grad(flow, conditions, create_graph=True)[0]
    return F.relu(-d_flow[:, 0]).mean()


def fit(vent_net, vent_opt, cond, flow):
    for epoch in range(OPTS["epochs"]):
        for i in range(0, cond.shape[0], OPTS["batch"]):
            x = cond[i:i + OPTS["batch"]].clone().requires_grad_(True)
            y = flow[i:i + OPTS["batch"]]
            vent_opt.zero_grad()
            pred = vent_net(x)
            fit_loss = F.mse_loss(pred, y)
            stack_penalty = stack_effect_penalty(pred, x)
            (fit_loss + 0.1 * stack_penalty).backward()
            vent_opt.step()
        print(f"epoch {epoch}: fit {fit_loss.item():.4f} stack {stack_penalty.item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(31)
    cond, flow = field_readings(OPTS["mounds"], OPTS["inputs"], OPTS["vents"])
    vent_net = VentSurrogate(OPTS["inputs"], OPTS["vents"], OPTS["hidden"])
    vent_opt = torch.optim.Adam(vent_net.parameters(), lr=OPTS["lr"])
    fit(vent_net, vent_opt, cond, flow)
