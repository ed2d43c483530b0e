"""Sequence-to-sequence forecast of a water utility's district inflow, loss computed in shards.

Reduced from Eurus-Holmes/MNMT issue #7, "RuntimeError: Trying to backward through the graph a
second time, but the buffers have already been freed. Specify retain_graph=True when calling
backward the first time." (https://github.com/Eurus-Holmes/MNMT/issues/7). The MNMT author,
training an OpenNMT-based multimodal translation model, hit this error in the trainer's
`sharded_compute_loss`: the decoder runs once per batch, then the target is cut into shards and
each shard's loss (generator + criterion on that slice of the decoder output) is divided by the
normalisation and backpropagated on its own, `loss.div(normalization).backward()`. Every shard's
backward goes back through the same decoder graph, so the second shard finds its buffers freed.
The author closed the issue with the fix they applied (onmt/Loss.py line 124 of the repository):
`loss.div(normalization).backward(retain_graph=True)`.

Reduction: an encoder-decoder GRU forecasts the next hours of inflow (m3/h) into a service
reservoir's district metered area from the past 48 h of inflow, pressure and air temperature.
A `Trainer` mirrors OpenNMT's: forward once, `sharded_compute_loss` over shards of the forecast
horizon through a separate generator head, then `optim.step()`. The horizon follows a short
curriculum (6 h in the first epoch, one shard; 24 h afterwards, four shards), so two Adam steps
run before the first multi-shard batch fails on its second shard.
"""
import torch
import torch.nn as nn

torch.manual_seed(5)

HPARAMS = {
    "history": 48,
    "features": 3,          # inflow, pressure, air temperature
    "hidden": 32,
    "horizon_schedule": [6, 24],
    "shard_size": 6,
    "series": 32,
    "batch_size": 16,
    "epochs": 2,
    "lr": 3e-3,
}


class InflowEncoder(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.rnn = nn.GRU(features, hidden, batch_first=True)

    def forward(self, history):
        _, state = self.rnn(history)
        return state


class InflowDecoder(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.rnn = nn.GRU(1, hidden, batch_first=True)

    def forward(self, last_inflow, state, horizon):
        outputs, step_in = [], last_inflow
        for _ in range(horizon):
            out, state = self.rnn(step_in, state)
            outputs.append(out)
            step_in = out.new_zeros(out.shape[0], 1, 1)
        return torch.cat(outputs, dim=1)          # (batch, horizon, hidden)


class Seq2SeqForecaster(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.encoder = InflowEncoder(features, hidden)
        self.decoder = InflowDecoder(hidden)

    def forward(self, history, horizon):
        state = self.encoder(history)
        return self.decoder(history[:, -1:, :1], state, horizon)


class ShardedLossCompute:
    def __init__(self, generator):
        self.generator = generator
        self.criterion = nn.SmoothL1Loss(reduction="sum")

    def _compute_loss(self, output, target):
        pred = self.generator(output).squeeze(-1)
        return self.criterion(pred, target)

    def sharded_compute_loss(self, output, target, shard_size, normalization):
        total = 0.0
        for out_shard, tgt_shard in zip(torch.split(output, shard_size, dim=1),
                                        torch.split(target, shard_size, dim=1)):
            loss = self._compute_loss(out_shard, tgt_shard)
            loss.div(normalization).backward(retain_graph=True)
            total += loss.item()
        return total


class Trainer:
    def __init__(self, model, generator, optim, hp):
        self.model = model
        self.train_loss = ShardedLossCompute(generator)
        self.optim = optim
        self.hp = hp

    def train_epoch(self, history, future, horizon):
        self.model.train()
        epoch_loss = 0.0
        for start in range(0, history.shape[0], self.hp["batch_size"]):
            src = history[start:start + self.hp["batch_size"]]
            tgt = future[start:start + self.hp["batch_size"], :horizon]
            self.model.zero_grad()
            self.train_loss.generator.zero_grad()
            outputs = self.model(src, horizon)
            normalization = tgt.numel()
            epoch_loss += self.train_loss.sharded_compute_loss(
                outputs, tgt, self.hp["shard_size"], normalization)
            self.optim.step()
        return epoch_loss


def district_series(n, history, horizon):
    t = torch.arange(history + horizon, dtype=torch.float32)
    daily = 1.0 + 0.4 * torch.sin(2 * torch.pi * (t - 7) / 24)
    scale = 0.8 + 0.4 * torch.rand(n, 1)
    inflow = scale * daily + 0.05 * torch.randn(n, history + horizon)
    pressure = 1.2 - 0.3 * inflow + 0.02 * torch.randn(n, history + horizon)
    temperature = 15 + 5 * torch.sin(2 * torch.pi * (t - 14) / 24) + torch.randn(n, history + horizon)
    feats = torch.stack([inflow, pressure, temperature / 20], dim=-1)
    return feats[:, :history], inflow[:, history:]


def main():
    hp = HPARAMS
    history, future = district_series(hp["series"], hp["history"], max(hp["horizon_schedule"]))
    model = Seq2SeqForecaster(hp["features"], hp["hidden"])
    generator = nn.Linear(hp["hidden"], 1)
    optim = torch.optim.Adam(list(model.parameters()) + list(generator.parameters()), lr=hp["lr"])
    trainer = Trainer(model, generator, optim, hp)
    for epoch in range(hp["epochs"]):
        horizon = hp["horizon_schedule"][min(epoch, len(hp["horizon_schedule"]) - 1)]
        loss = trainer.train_epoch(history, future, horizon)
        print(f"epoch {epoch}: horizon {horizon} h, loss {loss:.3f}")


if __name__ == "__main__":
    main()
