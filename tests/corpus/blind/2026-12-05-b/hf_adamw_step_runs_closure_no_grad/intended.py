"""A Lightning-style training loop (the closure is run by optimizer.step) with Hugging Face's AdamW.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/18254
"\"element 0 of tensors does not require grad and does not have a grad_fn\" when using AdamW from Hugging Face".
The reporter migrated a model to Lightning and used ``transformers.AdamW`` as the optimizer.
Reduced: the report's BoringModel and random data; Lightning's automatic optimisation (the
training step and backward wrapped in a closure handed to ``optimizer.step``) and transformers'
AdamW (whose ``step`` is decorated with ``@torch.no_grad()``) are written out.
Corrected as the Lightning fix (pull request 18268) does: the closure runs under ``torch.enable_grad()``.
"""

import math
from collections.abc import Callable

import torch
from torch.optim import Optimizer
from torch.utils.data import DataLoader, Dataset


class AdamW(Optimizer):
    """Adam with decoupled weight decay, as in transformers.optimization (2023)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, correct_bias=True):
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "correct_bias": correct_bias}
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable | None = None):
        loss = None
        if closure is not None:
            loss = closure()

        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                beta1, beta2 = group["betas"]
                state["step"] += 1
                exp_avg.mul_(beta1).add_(grad, alpha=(1.0 - beta1))
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
                denom = exp_avg_sq.sqrt().add_(group["eps"])
                step_size = group["lr"]
                if group["correct_bias"]:
                    bias_correction1 = 1.0 - beta1 ** state["step"]
                    bias_correction2 = 1.0 - beta2 ** state["step"]
                    step_size = step_size * math.sqrt(bias_correction2) / bias_correction1
                p.addcdiv_(exp_avg, denom, value=-step_size)
                if group["weight_decay"] > 0.0:
                    p.add_(p, alpha=(-group["lr"] * group["weight_decay"]))
        return loss


class RandomDataset(Dataset):
    def __init__(self, length):
        self.len = length
        self.data = torch.randn(length, 31)
        self.label = torch.zeros(length, dtype=torch.long)

    def __getitem__(self, index):
        return self.data[index], self.label[index]

    def __len__(self):
        return self.len


class BoringModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(31, 2)
        self.loss_fn = torch.nn.CrossEntropyLoss()

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch, batch_idx):
        input = batch[0]
        label = batch[1]
        out = self.layer(input)
        loss = self.loss_fn(out, label)
        return loss

    def configure_optimizers(self):
        return AdamW(self.parameters(), lr=0.1)


class Trainer:
    """Lightning's automatic optimisation: training_step and backward run inside optimizer.step."""

    def __init__(self, max_epochs):
        self.max_epochs = max_epochs

    def fit(self, model, train_dataloader):
        optimizer = model.configure_optimizers()
        for epoch in range(self.max_epochs):
            model.train()
            for batch_idx, batch in enumerate(train_dataloader):

                @torch.enable_grad()
                def closure():
                    loss = model.training_step(batch, batch_idx)  # noqa: B023 (the closure runs within this iteration)
                    optimizer.zero_grad()
                    loss.backward()
                    return loss

                loss = optimizer.step(closure=closure)
                print(f"epoch {epoch} batch {batch_idx} loss {loss.item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    train_data = DataLoader(RandomDataset(64), batch_size=16)
    model = BoringModel()
    trainer = Trainer(max_epochs=2)
    trainer.fit(model, train_data)
