"""Mortgage risk: a monthly hazard network whose survival schedule is reduced into a preallocated buffer.

Source: https://github.com/pytorch/pytorch/issues/74874 ("Gradient computation on modified tensor by
in-place operator"). The author preallocated a tensor, copied the inputs into some slots, and reduced them
pairwise into the next slots (``tensor[2] = op(tensor[0], tensor[1])``, ``tensor[4] = op(tensor[2],
tensor[3])``). With ``op=torch.add`` the gradient was fine; with ``op=torch.mul`` backward failed with
"modified by an inplace operation", because ``mul`` saves its inputs, which are slots of the buffer that
the later slot assignments overwrite (they share the buffer's version counter).

Reduction: the report's setting is a generic reduction; the training setting is the writer's. A loan-level
MLP predicts the monthly hazard of default or prepayment; a schedule builder reduces the monthly survival
factors into a preallocated buffer with a configurable combine op (multiplication for survival), and the
loss is a discrete-time survival likelihood on observed (censored) loan histories.
"""
import torch
import torch.nn as nn

torch.manual_seed(3)

CONFIG = {
    "n_features": 10,
    "horizon": 12,
    "hidden": 32,
    "batch": 128,
    "epochs": 4,
    "lr": 1e-2,
    "combine": torch.mul,
}


def synth_loans(n, n_features, horizon):
    """Loan features (LTV, DTI, FICO band, rate spread, ...) and the month each loan exits, if it does."""
    x = torch.randn(n, n_features)
    risk = 0.9 * x[:, 0] + 0.6 * x[:, 1] - 0.8 * x[:, 2]
    monthly = torch.sigmoid(risk - 3.0)
    exit_month = torch.distributions.Geometric(probs=monthly).sample().long()
    observed = exit_month < horizon
    exit_month = exit_month.clamp(max=horizon - 1)
    return x, exit_month, observed.float()


class HazardNet(nn.Module):
    def __init__(self, n_features, hidden, horizon):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, horizon))

    def forward(self, x):
        return torch.sigmoid(self.body(x) - 2.0)


def survival_schedule(hazard, combine):
    """S[:, t] = probability the loan is still on book at the start of month t (S[:, 0] = 1)."""
    n, horizon = hazard.shape
    columns = [torch.ones(n)]
    for t in range(horizon):
        columns.append(combine(columns[-1], 1.0 - hazard[:, t]))
    return torch.stack(columns, dim=1)


def survival_nll(hazard, schedule, exit_month, observed):
    rows = torch.arange(hazard.shape[0])
    on_book = schedule[rows, exit_month]
    h_exit = hazard[rows, exit_month]
    p_event = on_book * h_exit
    p_censored = schedule[rows, exit_month + 1]
    lik = observed * p_event + (1 - observed) * p_censored
    return -(lik.clamp_min(1e-8)).log().mean()


def main():
    x, exit_month, observed = synth_loans(CONFIG["batch"] * 3, CONFIG["n_features"], CONFIG["horizon"])
    hazard_net = HazardNet(CONFIG["n_features"], CONFIG["hidden"], CONFIG["horizon"])
    optimizer = torch.optim.Adam(hazard_net.parameters(), lr=CONFIG["lr"])

    for epoch in range(CONFIG["epochs"]):
        for start in range(0, x.shape[0], CONFIG["batch"]):
            sl = slice(start, start + CONFIG["batch"])
            hazard = hazard_net(x[sl])
            schedule = survival_schedule(hazard, CONFIG["combine"])
            nll = survival_nll(hazard, schedule, exit_month[sl], observed[sl])

            optimizer.zero_grad()
            nll.backward()
            optimizer.step()
        print(f"epoch {epoch}: nll {nll.item():.4f}  12m survival {schedule[:, -1].mean().item():.3f}")


if __name__ == "__main__":
    main()
