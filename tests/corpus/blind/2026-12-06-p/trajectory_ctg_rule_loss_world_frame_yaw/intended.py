"""Vehicle trajectory forecasting with a rule-based (lane-change) loss on the predicted poses.

Reduced from https://github.com/NVlabs/CTG/issues/3 ("RuntimeError: gradient computation has
been modified by an inplace operation"): the author works on CTG (controllable traffic
generation, tbsim layout). Future poses (x, y, yaw) are predicted per agent in each agent's
own frame; rule losses such as "ChangeToLeftLane" or "KeepDistance" are computed on the
predictions after converting them to the world frame with the geometry utilities
(transform_agents_to_world style), and are added to the usual reconstruction and heading
losses. Here a GRU history encoder with an MLP head forecasts the future poses; the training
loss is the position error, a heading term, and the lane-change rule loss. One Adam.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_AGENTS, HIST, FUT, HIDDEN = 8, 10, 12, 64
LEFT_LANE_Y = 3.5


class TrajectoryForecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.hist_enc = nn.GRU(3, HIDDEN, batch_first=True)
        self.head = nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, FUT * 3))

    def forward(self, hist):
        _, h = self.hist_enc(hist)
        out = self.head(h.squeeze(0)).view(-1, FUT, 3)
        pos_pred = out[..., :2]
        yaw_pred = out[..., 2:3]
        return pos_pred, yaw_pred


def angle_wrap(yaw):
    yaw[yaw > math.pi] -= 2 * math.pi
    yaw[yaw < -math.pi] += 2 * math.pi
    return yaw


def transform_agents_to_world(pos_pred, yaw_pred, world_from_agent):
    """Local agent poses to the world frame: pos (A, T, 2), yaw (A, T, 1), world_from_agent (A, 3, 3)."""
    yaw_pred = yaw_pred.clone()
    rot = world_from_agent[:, :2, :2]
    trans = world_from_agent[:, :2, 2]
    world_pos = torch.einsum("aij,atj->ati", rot, pos_pred) + trans[:, None, :]
    agent_yaw = torch.atan2(world_from_agent[:, 1, 0], world_from_agent[:, 0, 0])
    yaw_pred += agent_yaw[:, None, None]
    world_yaw = angle_wrap(yaw_pred)
    return world_pos, world_yaw


class ChangeToLeftLane:
    """Rule loss: end the horizon laterally on the left lane's centreline, heading along it."""

    def __init__(self, lane_y, lane_yaw=0.0):
        self.lane_y, self.lane_yaw = lane_y, lane_yaw

    def __call__(self, world_pos, world_yaw):
        lateral = (world_pos[:, -1, 1] - self.lane_y).abs().mean()
        heading = (1 - torch.cos(world_yaw[:, -1, 0] - self.lane_yaw)).mean()
        return lateral + heading


def make_batch():
    hist = torch.randn(N_AGENTS, HIST, 3).cumsum(dim=1) * 0.1
    fut_pos = torch.randn(N_AGENTS, FUT, 2).cumsum(dim=1) * 0.3
    fut_yaw = torch.randn(N_AGENTS, FUT, 1) * 0.2
    theta = torch.rand(N_AGENTS) * 0.4 - 0.2
    world_from_agent = torch.zeros(N_AGENTS, 3, 3)
    world_from_agent[:, 0, 0] = torch.cos(theta)
    world_from_agent[:, 0, 1] = -torch.sin(theta)
    world_from_agent[:, 1, 0] = torch.sin(theta)
    world_from_agent[:, 1, 1] = torch.cos(theta)
    world_from_agent[:, 0, 2] = torch.randn(N_AGENTS) * 5
    world_from_agent[:, 1, 2] = torch.randn(N_AGENTS)
    world_from_agent[:, 2, 2] = 1.0
    return hist, fut_pos, fut_yaw, world_from_agent


model = TrajectoryForecaster()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
rule_loss = ChangeToLeftLane(LEFT_LANE_Y)
RULE_WEIGHT = 0.1

for step in range(6):
    hist, fut_pos, fut_yaw, world_from_agent = make_batch()
    pos_pred, yaw_pred = model(hist)

    pos_loss = F.smooth_l1_loss(pos_pred, fut_pos)
    heading_pred = torch.cat([torch.cos(yaw_pred), torch.sin(yaw_pred)], dim=-1)
    heading_gt = torch.cat([torch.cos(fut_yaw), torch.sin(fut_yaw)], dim=-1)
    yaw_loss = F.mse_loss(heading_pred, heading_gt)

    world_pos, world_yaw = transform_agents_to_world(pos_pred, yaw_pred, world_from_agent)
    guide_loss = rule_loss(world_pos, world_yaw)

    loss = pos_loss + yaw_loss + RULE_WEIGHT * guide_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: pos {pos_loss.item():.3f} yaw {yaw_loss.item():.3f} rule {guide_loss.item():.3f}")
