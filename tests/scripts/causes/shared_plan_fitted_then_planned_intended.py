"""Irrigation scheduling in two phases per step: a planner proposes watering amounts, a soil model is fitted on
them (its optimizer holds the soil model only), then the planner's own loss reads the soil model's prediction of
the same plan."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

planner = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
soil = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
opt_plan = torch.optim.Adam(planner.parameters(), lr=1e-2)
opt_soil = torch.optim.Adam(soil.parameters(), lr=1e-2)


def fit_soil(state, measured):
    water = state["water"]
    opt_soil.zero_grad()
    soil_loss = F.mse_loss(soil(water.detach()), measured)
    soil_loss.backward()
    opt_soil.step()


def plan(state):
    water = state["water"]
    opt_plan.zero_grad()
    plan_loss = soil(water).mean() + 0.1 * water.pow(2).mean()
    plan_loss.backward()
    opt_plan.step()
    return plan_loss.item()


for it in range(3):
    state = {"water": planner(torch.randn(16, 5))}
    fit_soil(state, torch.randn(16, 1))
    print(it, round(plan(state), 4))
