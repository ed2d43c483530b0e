"""Multi-task model trained by a Composer-style Trainer whose model returns a tuple of task losses.

Source: https://github.com/mosaicml/composer/pull/1240

The author trains one network with two tasks on the same inputs: a shared
encoder, a classification head (cross-entropy) and a regression head (MSE).
Following the trainer's convention, the model's ``loss()`` returns one loss
per task as a tuple, so that each can be logged. The trainer splits each batch
into microbatches (gradient accumulation), scales every loss by the
microbatch's share of the batch, runs the backward pass and then steps the
optimizer. Synthetic data: 128 samples of 20 features, 4 classes and one
regression target.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(17)


def ensure_tuple(x):
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,)


class MultiTaskModel(nn.Module):
    def __init__(self, in_features=20, hidden=32, num_classes=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.Tanh())
        self.cls_head = nn.Linear(hidden, num_classes)
        self.reg_head = nn.Linear(hidden, 1)

    def forward(self, batch):
        x, _, _ = batch
        h = self.encoder(x)
        return self.cls_head(h), self.reg_head(h).squeeze(-1)

    def loss(self, outputs, batch):
        _, y_cls, y_reg = batch
        logits, pred = outputs
        cls_loss = F.cross_entropy(logits, y_cls)
        reg_loss = F.mse_loss(pred, y_reg)
        return cls_loss, reg_loss


class State:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.outputs = None
        self.loss = None


class Trainer:
    def __init__(self, model, optimizer, train_dataloader, grad_accum=2, max_epochs=1):
        self.state = State(model, optimizer)
        self.train_dataloader = train_dataloader
        self.grad_accum = grad_accum
        self.max_epochs = max_epochs

    def _train_microbatch(self, microbatch, current_batch_size):
        microbatch_num_samples = microbatch[0].shape[0]
        self.state.outputs = self.state.model(microbatch)
        self.state.loss = self.state.model.loss(self.state.outputs, microbatch)

        loss = sum(ensure_tuple(self.state.loss))
        loss.mul_(microbatch_num_samples / current_batch_size)
        total_loss = loss.detach().clone()
        loss.backward()
        return total_loss

    def _train_batch(self, batch):
        current_batch_size = batch[0].shape[0]
        microbatches = zip(*(t.chunk(self.grad_accum) for t in batch))
        self.state.optimizer.zero_grad()
        total_loss = 0.0
        for microbatch in microbatches:
            total_loss += self._train_microbatch(microbatch, current_batch_size)
        self.state.optimizer.step()
        return total_loss

    def fit(self):
        self.state.model.train()
        for epoch in range(self.max_epochs):
            for step, batch in enumerate(self.train_dataloader):
                total_loss = self._train_batch(batch)
                print(f"epoch {epoch} step {step} loss {float(total_loss):.4f}")


def make_dataloader(n=128, batch_size=32):
    x = torch.randn(n, 20)
    y_cls = torch.randint(0, 4, (n,))
    y_reg = x[:, :3].sum(dim=1) + 0.1 * torch.randn(n)
    return [(x[i : i + batch_size], y_cls[i : i + batch_size], y_reg[i : i + batch_size]) for i in range(0, n, batch_size)]


if __name__ == "__main__":
    train_dataloader = make_dataloader()
    model = MultiTaskModel()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    trainer = Trainer(model, optimizer, train_dataloader, grad_accum=2, max_epochs=2)
    trainer.fit()
