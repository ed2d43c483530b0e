"""A hand-written SGD step writes the weights in place without no_grad; the same function first loads the previous
run's weights into the model through .data. The refused write is the step's, not the load's."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(139)


def resume_and_train(model: nn.Module, saved: list[torch.Tensor]) -> None:
    for p, w in zip(model.parameters(), saved):
        p.data = w
    for _ in range(2):
        loss = F.mse_loss(model(torch.randn(5, 3)), torch.randn(5, 1))
        loss.backward()
        for p in model.parameters():
            p -= 0.1 * p.grad


net = nn.Linear(3, 1)
resume_and_train(net, [torch.randn(1, 3), torch.randn(1)])
