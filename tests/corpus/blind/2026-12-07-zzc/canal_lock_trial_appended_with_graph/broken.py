"""Canal lock cycle tuning: a surrogate-guided search whose new trial is appended to the data with its graph.

Source: https://github.com/meta-pytorch/botorch/issues/186
("fit_gpytorch_model wants retain_graph=True when fitting a model in a for loop even when creating a
new one"). The reporter alternated two phases in a loop: fit a surrogate to the observations, then
optimise an input tensor with Adam through the fitted model, evaluate the objective at it and go
round again. The next fit asked for retain_graph=True even though a fresh model was built: the new
observation had been computed from the optimised tensor (which requires grad) and still carried its
graph into the training data.

Reduction: a canal authority tunes four lock-cycle settings (fill time, empty time, the window for
batching vessels into one locking, upstream priority) against the mean vessel waiting time. Each
round fits a small delay model to all trials so far (phase 1), refines a candidate schedule by a few
gradient steps through the model starting from the best trial (phase 2), runs the lock simulator at
the candidate and appends the trial. The trial enters the observation tensors as computed.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

SETTINGS = ("fill_time", "empty_time", "batch_window", "upstream_priority")

SEARCH = {
    "n_initial": 10,
    "rounds": 4,
    "fit_steps": 4,
    "refine_steps": 2,
    "fit_lr": 0.02,
    "refine_lr": 0.05,
    "spread_penalty": 0.1,
}


def lock_queue_delay(schedule):
    """Mean vessel waiting minutes of a lock day simulated at the (scaled) schedule settings."""
    fill, empty, window, priority = schedule.unbind(-1)
    cycle = 8.0 + 20.0 * fill + 18.0 * empty
    queued = cycle * torch.sigmoid(4.0 * (0.5 - window))
    return (queued + 6.0 * (priority - 0.4) ** 2 + 3.0 * torch.sin(5.0 * window)) / 10.0


class DelayModel(nn.Module):
    def __init__(self, n_settings, hidden=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_settings, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, 1),
        )

    def forward(self, schedule):
        return self.net(schedule).squeeze(-1)


def fit_delay_model(delay_model, fit_opt, obs_x, obs_y, steps):
    for _ in range(steps):
        pred = delay_model(obs_x)
        fit_loss = F.mse_loss(pred, obs_y)
        fit_opt.zero_grad()
        fit_loss.backward()
        fit_opt.step()
    return fit_loss.item()


def refine_candidate(delay_model, candidate, acq_opt, start, steps, penalty):
    with torch.no_grad():
        candidate.copy_(start)
    for _ in range(steps):
        predicted_wait = delay_model(candidate.clamp(0.0, 1.0).unsqueeze(0))
        acq_loss = predicted_wait.sum() + penalty * (candidate - start).pow(2).sum()
        acq_opt.zero_grad()
        acq_loss.backward()
        acq_opt.step()


def main():
    torch.manual_seed(3)
    obs_x = torch.rand(SEARCH["n_initial"], len(SETTINGS))
    obs_y = lock_queue_delay(obs_x)

    delay_model = DelayModel(len(SETTINGS))
    fit_opt = torch.optim.Adam(delay_model.parameters(), lr=SEARCH["fit_lr"])
    candidate = torch.zeros(len(SETTINGS), requires_grad=True)
    acq_opt = torch.optim.Adam([candidate], lr=SEARCH["refine_lr"])

    for rnd in range(SEARCH["rounds"]):
        fit_mse = fit_delay_model(delay_model, fit_opt, obs_x, obs_y, SEARCH["fit_steps"])
        best = obs_x[obs_y.argmin()].detach()
        refine_candidate(delay_model, candidate, acq_opt, best, SEARCH["refine_steps"], SEARCH["spread_penalty"])

        trial_x = candidate.clamp(0.0, 1.0).unsqueeze(0)
        trial_y = lock_queue_delay(trial_x)
        obs_x = torch.cat([obs_x, trial_x])
        obs_y = torch.cat([obs_y, trial_y])
        print(
            f"round {rnd}: fit mse {fit_mse:.4f}, trial wait {trial_y.item() * 10:.1f} min, "
            f"best so far {obs_y.min().item() * 10:.1f} min"
        )

    best = obs_x[obs_y.argmin()]
    print("best schedule:", dict(zip(SETTINGS, [round(v, 3) for v in best.tolist()])))


if __name__ == "__main__":
    main()
