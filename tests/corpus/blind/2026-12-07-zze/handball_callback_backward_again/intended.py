"""Handball shot tracking: a shot-outcome head and a goal-zone head, trained by a small callback runner.

Source: https://github.com/catalyst-team/catalyst/issues/1435 ("Multi Criterion Training").
The author trains one model with two cross-entropy criteria inside a catalyst runner's
``handle_batch``: it computes ``loss1`` and ``loss2``, stores them (and their sum) in
``self.batch_metrics``, and calls ``self.engine.backward(loss_ce1ce2)`` and the optimizer
itself; the run fails with "Trying to backward through the graph a second time". The
writer's reduction: a tiny runner whose ``handle_batch`` backwards and steps on the summed
loss, as in the report, while the runner's callback list also holds an optimizer callback
that backwards the batch's loss read from ``batch_metrics`` after ``handle_batch`` returns.
The tracking data (ball-trajectory features of shots, the shot's outcome and the goal zone
it went to) is synthetic.
"""
import torch
import torch.nn as nn

CONFIG = {"n_shots": 96, "n_features": 14, "hidden": 32, "batch": 16, "lr": 3e-3, "epochs": 2}
OUTCOMES = 3   # goal, saved, missed
ZONES = 9      # 3x3 grid of the goal mouth


class ShotNet(nn.Module):
    def __init__(self, n_features, hidden):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.outcome_head = nn.Linear(hidden, OUTCOMES)
        self.zone_head = nn.Linear(hidden, ZONES)

    def forward(self, x):
        h = self.trunk(x)
        return self.outcome_head(h), self.zone_head(h)


class Callback:
    def on_batch_end(self, runner):
        pass


class MeterCallback(Callback):
    def __init__(self):
        self.history = []

    def on_batch_end(self, runner):
        self.history.append({k: v.item() for k, v in runner.batch_metrics.items()})


class OptimizerCallback(Callback):
    def __init__(self, metric_key):
        self.metric_key = metric_key

    def on_batch_end(self, runner):
        loss = runner.batch_metrics[self.metric_key]
        loss.backward()
        runner.optimizer.step()
        runner.optimizer.zero_grad()


class ShotRunner:
    def __init__(self, model, criterion, optimizer, callbacks):
        self.model = model
        self.criterion = criterion
        self.optimizer = optimizer
        self.callbacks = callbacks
        self.batch_metrics = {}
        self.is_train_loader = True

    def handle_batch(self, batch):
        features, outcome, zone = batch
        logits_outcome, logits_zone = self.model(features)
        loss_outcome = self.criterion["outcome"](logits_outcome, outcome)
        loss_zone = self.criterion["zone"](logits_zone, zone)
        loss_total = loss_outcome + loss_zone
        self.batch_metrics.update({"loss_outcome": loss_outcome, "loss_zone": loss_zone, "loss_total": loss_total})
        if self.is_train_loader:
            loss_total.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()

    def run_epoch(self, loader):
        for batch in loader:
            self.handle_batch(batch)
            for cb in self.callbacks:
                cb.on_batch_end(self)


def make_shots(cfg):
    x = torch.randn(cfg["n_shots"], cfg["n_features"])
    outcome = torch.randint(0, OUTCOMES, (cfg["n_shots"],))
    zone = torch.randint(0, ZONES, (cfg["n_shots"],))
    return x, outcome, zone


def batches(data, size):
    x, outcome, zone = data
    for i in range(0, x.shape[0], size):
        yield x[i:i + size], outcome[i:i + size], zone[i:i + size]


def main():
    torch.manual_seed(11)
    data = make_shots(CONFIG)
    shot_net = ShotNet(CONFIG["n_features"], CONFIG["hidden"])
    class_weights = torch.tensor([1.5, 1.0, 1.0])
    criterion = {"outcome": nn.CrossEntropyLoss(weight=class_weights), "zone": nn.CrossEntropyLoss()}
    optimizer = torch.optim.Adam(shot_net.parameters(), lr=CONFIG["lr"])
    meter = MeterCallback()
    runner = ShotRunner(shot_net, criterion, optimizer, [meter])
    for epoch in range(CONFIG["epochs"]):
        runner.run_epoch(batches(data, CONFIG["batch"]))
        last = meter.history[-1]
        print(f"epoch {epoch}: outcome {last['loss_outcome']:.4f} zone {last['loss_zone']:.4f}")


if __name__ == "__main__":
    main()
