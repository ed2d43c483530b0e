"""Basket-value regression for an online grocery shop, residual MLP with ``h += skip``.

Source: PyTorch forum thread "What is the impact of using x+=y in the forward method
of Pytorch?", https://discuss.pytorch.org/t/what-is-the-impact-of-using-x-y-in-the-forward-method-of-pytorch/190768
(opened at the accepted reply, /190768/3).

The author wrote a residual block whose forward adds the branch back with the augmented
assignment ``x += y`` and asked whether that is safe for autograd.  The accepted answer
(ptrblck) is that autograd only forbids an in-place operation when the original value of
the tensor is still needed for the gradient, and that it raises "one of the variables
needed for gradient computation has been modified by an inplace operation" when it is;
the fix is the out-of-place ``x = x + y`` wherever the overwritten tensor was saved.

Corrected here: ``h = h + skip`` (out of place), as the accepted answer says.

Reduction: a shopper-session encoder predicts the next basket value from session
features.  The hidden activation ``h`` is the output of a ReLU (whose backward keeps its
output) and the input of the skip Linear (whose backward keeps its input); ``h += skip``
overwrites it in place, so the first ``loss.backward()`` fails with the in-place error.
Adam over the whole model, several epochs of mini-batches, synthetic data.
"""
import torch
import torch.nn as nn

torch.manual_seed(7)

HPARAMS = {
    "n_sessions": 256,
    "n_features": 12,
    "hidden": 32,
    "batch_size": 32,
    "epochs": 3,
    "lr": 3e-3,
}


def make_sessions(n, d):
    """Synthetic shopper sessions: features and a basket value in currency units."""
    feats = torch.randn(n, d)
    price_weights = torch.linspace(0.5, 2.0, d)
    value = (feats.clamp(min=0) * price_weights).sum(dim=1, keepdim=True) + 0.1 * torch.randn(n, 1)
    return feats, value


class ResidualBlock(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.skip = nn.Linear(hidden, hidden)

    def forward(self, h):
        skip = torch.tanh(self.skip(h))
        h = h + skip  # out of place, as the accepted answer says
        return h


class BasketValueModel(nn.Module):
    def __init__(self, n_features, hidden):
        super().__init__()
        self.embed = nn.Linear(n_features, hidden)
        self.block = ResidualBlock(hidden)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        h = torch.relu(self.embed(x))
        h = self.block(h)
        return self.head(h)


def main():
    feats, value = make_sessions(HPARAMS["n_sessions"], HPARAMS["n_features"])
    model = BasketValueModel(HPARAMS["n_features"], HPARAMS["hidden"])
    optimizer = torch.optim.Adam(model.parameters(), lr=HPARAMS["lr"])
    criterion = nn.MSELoss()

    bs = HPARAMS["batch_size"]
    for epoch in range(HPARAMS["epochs"]):
        perm = torch.randperm(feats.shape[0])
        running = 0.0
        for start in range(0, feats.shape[0], bs):
            idx = perm[start:start + bs]
            optimizer.zero_grad()
            pred = model(feats[idx])
            loss = criterion(pred, value[idx])
            loss.backward()
            optimizer.step()
            running += loss.item()
        print(f"epoch {epoch}: mse {running / (feats.shape[0] // bs):.4f}")


if __name__ == "__main__":
    main()
