"""Grip selection and grip-force control for a tactile prosthetic hand.

Source: https://discuss.pytorch.org/t/can-not-create-a-new-calculation-graph-after-the-backward-propagation/45026

The author trained a DQN head and a DDPG actor on top of one shared CNN+LSTM state
encoder, each loss with its own optimizers: loss_dqn.backward() and the steps of the
encoder and DQN optimizers, then a fresh forward of the CNN+LSTM for the actor loss,
whose backward still raised "Trying to backward through the graph a second time".
The reduction keeps the two heads (a Q-value head over grip types and a continuous
grip-force head), the shared recurrent encoder and the three optimizers; the encoder
is a GRU cell over tactile frames that keeps its recurrent state on the module
between calls, as the author's forward_cnnlstm kept and returned its LSTM state.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "taxels": 24,
    "hidden": 32,
    "grip_types": 4,
    "batch": 16,
    "frames": 6,
    "updates": 5,
    "lr_encoder": 1e-3,
    "lr_heads": 2e-3,
}


class TactileEncoder(nn.Module):
    """Projects each taxel frame and runs a GRU cell over the contact sequence."""

    def __init__(self, taxels, hidden):
        super().__init__()
        self.proj = nn.Linear(taxels, hidden)
        self.cell = nn.GRUCell(hidden, hidden)
        self.state = None

    def reset_state(self, batch):
        self.state = torch.zeros(batch, self.cell.hidden_size)

    def forward(self, frames):
        h = self.state
        for t in range(frames.shape[0]):
            h = self.cell(torch.tanh(self.proj(frames[t])), h)
        self.state = h.detach()
        return h


class GripAgent:
    def __init__(self, cfg):
        self.cfg = cfg
        self.encoder = TactileEncoder(cfg["taxels"], cfg["hidden"])
        self.grip_head = nn.Sequential(nn.Linear(cfg["hidden"], 32), nn.ReLU(), nn.Linear(32, cfg["grip_types"]))
        self.force_head = nn.Sequential(nn.Linear(cfg["hidden"], 32), nn.ReLU(), nn.Linear(32, 1))
        self.opt_encoder = torch.optim.Adam(self.encoder.parameters(), lr=cfg["lr_encoder"])
        self.opt_grip = torch.optim.Adam(self.grip_head.parameters(), lr=cfg["lr_heads"])
        self.opt_force = torch.optim.Adam(self.force_head.parameters(), lr=cfg["lr_heads"])
        self.encoder.reset_state(cfg["batch"])

    def update(self, batch):
        frames, grip_taken, reward, target_force = batch

        # grip-type value head
        z = self.encoder(frames)
        q_taken = self.grip_head(z).gather(1, grip_taken.unsqueeze(1)).squeeze(1)
        grip_loss = F.smooth_l1_loss(q_taken, reward)
        self.opt_encoder.zero_grad()
        self.opt_grip.zero_grad()
        grip_loss.backward()
        self.opt_encoder.step()
        self.opt_grip.step()

        # grip-force head, on a fresh pass of the encoder
        z = self.encoder(frames)
        force = torch.sigmoid(self.force_head(z)).squeeze(1)
        force_loss = F.mse_loss(force, target_force)
        self.opt_encoder.zero_grad()
        self.opt_force.zero_grad()
        force_loss.backward()
        self.opt_encoder.step()
        self.opt_force.step()
        return grip_loss.item(), force_loss.item()


def make_batch(cfg):
    frames = torch.rand(cfg["frames"], cfg["batch"], cfg["taxels"])
    pressure = frames.mean(dim=(0, 2))
    grip_taken = torch.randint(0, cfg["grip_types"], (cfg["batch"],))
    reward = (pressure - 0.5) * 4.0 + 0.1 * torch.randn(cfg["batch"])
    target_force = pressure.clamp(0.0, 1.0)
    return frames, grip_taken, reward, target_force


def main():
    torch.manual_seed(7)
    agent = GripAgent(CONFIG)
    for it in range(CONFIG["updates"]):
        batch = make_batch(CONFIG)
        g, f = agent.update(batch)
        print(f"update {it}: grip {g:.4f} force {f:.4f}")


if __name__ == "__main__":
    main()
