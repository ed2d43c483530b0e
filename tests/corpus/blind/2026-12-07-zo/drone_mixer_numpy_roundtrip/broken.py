"""Quadrotor hover controller trained by backpropagating through a short simulated rollout.

Source: https://github.com/delira-dev/delira/issues/40 -- "Can pytorch_tensor_to_numpy
backword gradient?": a user's pipeline converted a network's output with delira's
``pytorch_tensor_to_numpy`` before the next stage; the maintainer answered that it
cannot: "For gradient taping ... you have to stick with the functions provided by torch
... Since numpy does not support gradients in the same way pytorch does, there is no way
to propagate gradients through this function."

Reduction: the network is a drone policy (state -> collective thrust and three body
torques); the motor mixer is a NumPy routine taken from a flight-stack utility, the motor
thrusts come back with ``torch.as_tensor``, and a simplified rigid-body model in torch
rolls the drone forward; the loss is the hover-tracking error over the rollout.
"""
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(5)
np.random.seed(5)

SIM = dict(dt=0.02, horizon=15, mass=0.8, arm=0.12, k_yaw=0.02, max_thrust=4.0, g=9.81, batch=32, iters=4)

# X-configuration mixer: [T, tx, ty, tz] -> four motor thrusts
_L = SIM["arm"] / np.sqrt(2.0)
MIXER = np.linalg.pinv(np.array([
    [1.0, 1.0, 1.0, 1.0],
    [_L, -_L, -_L, _L],
    [-_L, -_L, _L, _L],
    [SIM["k_yaw"], -SIM["k_yaw"], SIM["k_yaw"], -SIM["k_yaw"]],
]))


def mix_to_motors(wrench):
    """Flight-stack helper: wrench commands (B, 4) -> saturated motor thrusts (B, 4)."""
    motors = wrench @ MIXER.T
    return np.clip(motors, 0.0, SIM["max_thrust"])


class HoverPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(12, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 4))
        self.register_buffer("hover", torch.tensor([SIM["mass"] * SIM["g"], 0.0, 0.0, 0.0]))

    def forward(self, state):
        return self.hover + self.body(state)


def step_dynamics(state, motors):
    pos, vel, att, rates = state.split(3, dim=1)
    thrust = motors.sum(1, keepdim=True)
    L, k = SIM["arm"] / np.sqrt(2.0), SIM["k_yaw"]
    torque = torch.stack([
        L * (motors[:, 0] - motors[:, 1] - motors[:, 2] + motors[:, 3]),
        L * (-motors[:, 0] - motors[:, 1] + motors[:, 2] + motors[:, 3]),
        k * (motors[:, 0] - motors[:, 1] + motors[:, 2] - motors[:, 3]),
    ], dim=1)
    roll, pitch = att[:, :1], att[:, 1:2]
    acc = torch.cat([thrust * pitch, -thrust * roll, thrust - SIM["mass"] * SIM["g"]], dim=1) / SIM["mass"]
    dt = SIM["dt"]
    return torch.cat([pos + dt * vel, vel + dt * acc, att + dt * rates, rates + dt * torque / 0.01], dim=1)


def rollout_loss(policy, start, goal):
    state, cost = start, 0.0
    for _ in range(SIM["horizon"]):
        wrench = policy(state - torch.cat([goal, torch.zeros_like(goal).repeat(1, 3)], dim=1))
        motors = torch.as_tensor(mix_to_motors(wrench.detach().cpu().numpy()), dtype=torch.float32)
        state = step_dynamics(state, motors)
        cost = cost + ((state[:, :3] - goal) ** 2).sum(1).mean() + 0.1 * (state[:, 6:] ** 2).sum(1).mean()
    return cost / SIM["horizon"]


def main():
    policy = HoverPolicy()
    policy_opt = torch.optim.Adam(policy.parameters(), lr=3e-3)
    for it in range(SIM["iters"]):
        start = torch.cat([0.3 * torch.randn(SIM["batch"], 3), 0.1 * torch.randn(SIM["batch"], 9)], dim=1)
        goal = torch.zeros(SIM["batch"], 3)
        track_loss = rollout_loss(policy, start, goal)
        policy_opt.zero_grad()
        track_loss.backward()
        policy_opt.step()
        print(f"iter {it}: tracking {track_loss.item():.4f}")


if __name__ == "__main__":
    main()
