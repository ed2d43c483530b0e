"""Vending-machine / kiosk restocking: forecasting per-slot sell-through before a restock run.

Reduced from https://discuss.pytorch.org/t/call-backward-to-clear-graph/164294
The author wanted to confirm that ``loss.backward()`` frees the graph and looked
at ``loss.grad_fn`` after the call; the reply explains that the saved tensors are
released by the backward, and that calling backward a second time on the same
loss shows it ("try a second backward call right after the first"). Here a
training loop's logging callback calls ``backward()`` on the loss it is handed,
to be sure the gradients it reports exist, after the loop already ran backward
on that loss.
"""
import torch
import torch.nn as nn

torch.manual_seed(8)

FLEET = {"machines": 12, "slots": 10, "history_days": 7}
OPTIM = {"lr": 5e-3, "weight_decay": 1e-4, "epochs": 4}


def telemetry(machines, slots, days):
    """Daily vends per slot for the last `days` days, plus calendar/weather context."""
    base = torch.rand(machines, slots) * 6
    weekly = 1 + 0.3 * torch.sin(torch.arange(days).float() / days * 6.28)
    vends = torch.poisson(base.unsqueeze(-1) * weekly)
    context = torch.randn(machines, 3)
    next_day = torch.poisson(base * 1.1)
    return vends, context, next_day


class SellThroughNet(nn.Module):
    def __init__(self, days, ctx_dim, hidden=16):
        super().__init__()
        self.slot_enc = nn.Linear(days, hidden)
        self.ctx_enc = nn.Linear(ctx_dim, hidden)
        self.head = nn.Linear(hidden, 1)

    def forward(self, vends, context):
        h = torch.relu(self.slot_enc(vends) + self.ctx_enc(context).unsqueeze(1))
        return torch.exp(self.head(h).squeeze(-1))


class GradNormLogger:
    def __init__(self, model):
        self.model = model
        self.history = []

    def __call__(self, epoch, loss):
        total = torch.sqrt(sum((p.grad ** 2).sum() for p in self.model.parameters() if p.grad is not None))
        self.history.append(total.item())
        print(f"epoch {epoch}: loss {loss.item():.3f} grad-norm {total.item():.3f}")


def train(forecaster, optimizer, data, callbacks):
    vends, context, next_day = data
    poisson_nll = nn.PoissonNLLLoss(log_input=False)
    for epoch in range(OPTIM["epochs"]):
        optimizer.zero_grad()
        rate = forecaster(vends, context)
        demand_loss = poisson_nll(rate, next_day)
        demand_loss.backward()
        for cb in callbacks:
            cb(epoch, demand_loss)
        optimizer.step()


if __name__ == "__main__":
    data = telemetry(FLEET["machines"], FLEET["slots"], FLEET["history_days"])
    forecaster = SellThroughNet(FLEET["history_days"], 3)
    optimizer = torch.optim.Adam(forecaster.parameters(), lr=OPTIM["lr"], weight_decay=OPTIM["weight_decay"])
    train(forecaster, optimizer, data, [GradNormLogger(forecaster)])
