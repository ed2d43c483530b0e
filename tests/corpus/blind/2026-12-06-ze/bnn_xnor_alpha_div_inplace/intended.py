"""XNOR-Net style binarized MLP with an analytical per-row weight scale.

Report: https://github.com/1adrianb/binary-networks-pytorch/issues/11 -- the author converted a
torchvision model with the library's ``XNORWeightBinarizer`` and ``loss.backward()`` failed with
"modified by an inplace operation ... output 0 of NormBackward1". The binarizer computes the
XNOR scaling factor as ``x.norm(1, 1, keepdim=True).div_(n)``: the in-place division overwrites
the norm's result, which the norm saved for its backward.

Here a small binarized classifier (sign activations with a straight-through estimator, latent
real-valued weights clipped to [-1, 1] after each step, full-precision first and last layers)
is trained on synthetic data with Adam; the binarizer is written the way the library wrote it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SignSTE(torch.autograd.Function):
    """sign() forward, hard-tanh straight-through estimator backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.where(x >= 0, torch.ones_like(x), -torch.ones_like(x))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        grad_in = grad_out.clone()
        grad_in.masked_fill_(x.abs() > 1, 0.0)
        return grad_in


class XNORWeightBinarizer(nn.Module):
    def _compute_alpha(self, w):
        n = w[0].nelement()
        # mean absolute value of each output row, as in the XNOR-Net paper
        return w.norm(1, 1, keepdim=True).div(n)

    def forward(self, w):
        alpha = self._compute_alpha(w)
        return SignSTE.apply(w) * alpha.expand_as(w)


class BinaryLinear(nn.Linear):
    def __init__(self, in_features, out_features):
        super().__init__(in_features, out_features, bias=False)
        self.binarizer = XNORWeightBinarizer()

    def forward(self, x):
        xb = SignSTE.apply(x)
        return F.linear(xb, self.binarizer(self.weight))


class BinaryMLP(nn.Module):
    def __init__(self, d_in=64, hidden=128, n_classes=4):
        super().__init__()
        self.fc_in = nn.Linear(d_in, hidden)          # full precision
        self.bn_in = nn.BatchNorm1d(hidden)
        self.b1 = BinaryLinear(hidden, hidden)
        self.bn1 = nn.BatchNorm1d(hidden)
        self.b2 = BinaryLinear(hidden, hidden)
        self.bn2 = nn.BatchNorm1d(hidden)
        self.fc_out = nn.Linear(hidden, n_classes)    # full precision

    def forward(self, x):
        h = F.hardtanh(self.bn_in(self.fc_in(x)))
        h = F.hardtanh(self.bn1(self.b1(h)))
        h = F.hardtanh(self.bn2(self.b2(h)))
        return self.fc_out(h)


def make_data(n=512, d=64, n_classes=4):
    centers = torch.randn(n_classes, d) * 2.0
    y = torch.randint(0, n_classes, (n,))
    x = centers[y] + torch.randn(n, d)
    return x, y


def clip_latent_weights(model):
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, BinaryLinear):
                m.weight.clamp_(-1.0, 1.0)


x_all, y_all = make_data()
model = BinaryMLP()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(3):
    perm = torch.randperm(x_all.shape[0])
    for i in range(0, x_all.shape[0], 64):
        idx = perm[i:i + 64]
        logits = model(x_all[idx])
        loss = F.cross_entropy(logits, y_all[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        clip_latent_weights(model)
    acc = (model(x_all).argmax(1) == y_all).float().mean().item()
    print(f"epoch {epoch} loss {loss.item():.3f} acc {acc:.3f}")
