"""Light-rail headway control: per-direction holding times from one policy output.

Source: https://github.com/pytorch/pytorch/issues/36608 -- the outputs of ``unbind()``
are views of one tensor, and modifying one of them in place (``v1[0].mul_(2)``) raises
"Output 0 of UnbindBackward is a view and is being modified inplace. This view is the
output of a function that returns multiple views."

Reduction: a headway controller predicts holding times for the inbound and outbound
directions in one ``(batch, 2)`` output, splits it with ``unbind(dim=1)``, and a limits
callback run after each forward clamps the inbound holding time in place to the
operator's minimum dwell. The tram setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

SETTINGS = {
    "stops": 14,
    "state_per_stop": 3,      # gap to leader, gap to follower, waiting passengers
    "hidden": 40,
    "batch": 20,
    "updates": 5,
    "min_dwell": 0.2,
}


def sample_line_state(cfg):
    state = torch.randn(cfg["batch"], cfg["stops"] * cfg["state_per_stop"])
    gaps = state[:, 0::3]
    target_hold = torch.stack([
        F.softplus(gaps[:, :7].mean(1) - gaps[:, 7:].mean(1)),
        F.softplus(gaps[:, 7:].mean(1) - gaps[:, :7].mean(1)),
    ], dim=1)
    return state, target_hold


class HeadwayPolicy(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["stops"] * cfg["state_per_stop"]
        self.body = nn.Sequential(nn.Linear(d, cfg["hidden"]), nn.ELU(), nn.Linear(cfg["hidden"], cfg["hidden"]), nn.ELU())
        self.hold = nn.Linear(cfg["hidden"], 2)

    def forward(self, state):
        return F.softplus(self.hold(self.body(state)))


def apply_operator_limits(inbound, outbound, cfg):
    inbound = inbound.clamp(min=cfg["min_dwell"])
    return inbound, outbound


def control_round(policy, policy_optim, cfg, callbacks):
    state, target_hold = sample_line_state(cfg)
    holds = policy(state)
    inbound, outbound = holds.unbind(dim=1)
    for cb in callbacks:
        inbound, outbound = cb(inbound, outbound, cfg)
    headway_loss = F.mse_loss(inbound, target_hold[:, 0]) + F.mse_loss(outbound, target_hold[:, 1])
    policy_optim.zero_grad()
    headway_loss.backward()
    policy_optim.step()
    return headway_loss.item()


def main(cfg=SETTINGS):
    policy = HeadwayPolicy(cfg)
    policy_optim = torch.optim.RMSprop(policy.parameters(), lr=2e-3)
    for r in range(cfg["updates"]):
        print(f"round {r}: {control_round(policy, policy_optim, cfg, [apply_operator_limits]):.4f}")


main()
