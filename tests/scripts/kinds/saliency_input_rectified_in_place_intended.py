"""The intended training of saliency_input_rectified_in_place.py: the input stage out of place.

An input-sensitivity penalty: the features are made a leaf that requires grad so that the penalty can read their
gradient, and the model's input stage rectifies and drops them out in place, on that leaf."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 1))

    def forward(self, x):
        x = F.relu(x)
        x = F.dropout(x, p=0.2, training=self.training)
        return self.body(x).squeeze(-1)


model = Scorer()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for it in range(3):
    feats = torch.randn(16, 6).requires_grad_(True)
    target = torch.randn(16)
    pred = model(feats)
    fit = F.mse_loss(pred, target)
    (grad,) = torch.autograd.grad(fit, feats, create_graph=True)
    total = fit + 0.1 * grad.pow(2).mean()
    opt.zero_grad()
    total.backward()
    opt.step()
    print(it, round(total.item(), 4))
