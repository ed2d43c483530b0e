"""Bobsled run timing: predict the four split times of a run from push-start and sled telemetry.

Source: https://github.com/huggingface/transformers/issues/7662 ("loss.backward() being called
twice in Trainer._training_step()"). The author subclasses GPT2LMHeadModel to add a custom
term computed from an n-gram model to the training loss and trains it with the Hugging Face
Trainer, and reports that the training step ends up calling backward twice. The writer's
reduction of that pattern: a model whose ``forward`` computes its extra term (here a
monotonicity penalty on the cumulative split predictions) and backpropagates it on the
spot, then returns the main loss, which the trainer's ``training_step`` backwards again
through the same shared encoder. The runs (push-start speed, sled weight, ice temperature,
curve entry speeds) are synthetic.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

TRAIN_ARGS = {"n_runs": 80, "n_telemetry": 10, "hidden": 24, "batch_size": 20, "lr": 2e-3, "epochs": 2, "mono_weight": 0.5}
N_SPLITS = 4


class SplitTimeModel(nn.Module):
    def __init__(self, n_telemetry, hidden, mono_weight):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(n_telemetry, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.split_head = nn.Linear(hidden, N_SPLITS)
        self.mono_weight = mono_weight

    def monotonic_penalty(self, splits):
        cumulative = torch.cumsum(F.softplus(splits), dim=1)
        gaps = cumulative[:, 1:] - cumulative[:, :-1]
        return F.relu(0.2 - gaps).pow(2).mean()

    def forward(self, telemetry, labels=None):
        h = self.encoder(telemetry)
        splits = self.split_head(h)
        out = {"splits": splits}
        if labels is not None:
            mono_loss = self.mono_weight * self.monotonic_penalty(splits)
            if self.training:
                mono_loss.backward()
            out["loss"] = F.smooth_l1_loss(splits, labels)
            out["mono_loss"] = mono_loss.detach()
        return out


class Trainer:
    def __init__(self, model, args, train_set):
        self.model = model
        self.args = args
        self.train_set = train_set
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=args["lr"], weight_decay=0.01)
        self.log = []

    def compute_loss(self, model, inputs):
        outputs = model(inputs["telemetry"], labels=inputs["labels"])
        return outputs["loss"]

    def training_step(self, model, inputs):
        model.train()
        split_loss = self.compute_loss(model, inputs)
        split_loss.backward()
        return split_loss.detach()

    def get_train_dataloader(self):
        x, y = self.train_set
        bs = self.args["batch_size"]
        return [{"telemetry": x[i:i + bs], "labels": y[i:i + bs]} for i in range(0, x.shape[0], bs)]

    def train(self):
        for epoch in range(self.args["epochs"]):
            for inputs in self.get_train_dataloader():
                loss = self.training_step(self.model, inputs)
                self.optimizer.step()
                self.optimizer.zero_grad()
                self.log.append(loss.item())
            print(f"epoch {epoch}: split loss {self.log[-1]:.4f}")


def simulate_runs(args):
    telemetry = torch.randn(args["n_runs"], args["n_telemetry"])
    base = torch.tensor([4.9, 12.8, 21.0, 29.6])
    drift = telemetry[:, :N_SPLITS] * 0.15
    labels = base + drift.cumsum(dim=1)
    return telemetry, labels / 10.0


def main():
    torch.manual_seed(5)
    train_set = simulate_runs(TRAIN_ARGS)
    split_model = SplitTimeModel(TRAIN_ARGS["n_telemetry"], TRAIN_ARGS["hidden"], TRAIN_ARGS["mono_weight"])
    trainer = Trainer(split_model, TRAIN_ARGS, train_set)
    trainer.train()


if __name__ == "__main__":
    main()
