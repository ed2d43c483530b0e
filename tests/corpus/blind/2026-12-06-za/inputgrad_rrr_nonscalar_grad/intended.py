"""(Intended: the log-probabilities reduced before the input gradient.) "Right for the right reasons": a tabular classifier with an input-gradient penalty on features
annotated as irrelevant (double backpropagation with create_graph=True).

Source: https://github.com/Animadversio/GAN-Geometry/issues/4 -- the author called
``torch.autograd.grad(activs, perturb_vecs, ...)`` on a multi-dimensional activation tensor and got
"grad can be implicitly created only for scalar outputs"; they fixed it by reducing the output first
(``torch.autograd.grad(activs.mean(), perturb_vecs, ...)``), which the maintainer confirmed. The
training setting is the writer's: the explanation gradient of the log-probabilities with respect to
the input, taken without reducing them, inside an RRR loss.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N, D, CLASSES, BATCH = 128, 10, 3, 32
LAMBDA_RRR = 10.0


class TabularMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(D, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, CLASSES))

    def forward(self, x):
        return self.net(x)


def make_data():
    x = torch.randn(N, D)
    y = (x[:, :3].sum(1) > 0).long() + (x[:, 3] > 1).long()
    # a confounder: the last two features leak the label in the training set
    x[:, -2:] += y[:, None].float()
    irrelevant = torch.zeros(N, D)
    irrelevant[:, -2:] = 1.0
    return x, y, irrelevant


def rrr_loss(model, x, y, mask):
    x = x.clone().requires_grad_(True)
    logits = model(x)
    ce = F.cross_entropy(logits, y)
    log_probs = F.log_softmax(logits, dim=1)
    input_grads = torch.autograd.grad(log_probs.mean(), x, create_graph=True)[0]
    penalty = ((mask * input_grads) ** 2).sum(1).mean()
    return ce, penalty


x_all, y_all, mask_all = make_data()
model = TabularMLP()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(3):
    perm = torch.randperm(N)
    for start in range(0, N, BATCH):
        idx = perm[start:start + BATCH]
        ce, penalty = rrr_loss(model, x_all[idx], y_all[idx], mask_all[idx])
        loss = ce + LAMBDA_RRR * penalty
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} ce {ce.item():.3f} rrr {penalty.item():.4f}")
