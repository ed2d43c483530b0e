"""House-price appraisal regressor whose forward graph is built once and reused per batch.

Source: PyTorch forum thread "How does one reuse the autograd computational graph",
https://discuss.pytorch.org/t/how-does-one-reuse-the-autograd-computational-graph/190447

The author built an expression graph once (a determinant by expansion by minors of a
leaf matrix ``ax``), then wrote new values into ``ax.data`` and called ``backward`` on
the same output again, hoping autograd would re-evaluate the old graph at the new point.
To get past the freed buffers they passed ``retain_graph=True``; it then "worked" for a
2x2 matrix and gave wrong gradients for 3x3, because a graph stores the intermediate
values of the forward that built it and never recomputes them.  What they evidently
want is the gradient at the new inputs, i.e. a forward pass run again on them.

Corrected here: the forward runs again on every batch; no buffer, no reused graph.

Reduction: an appraisal model for residential listings.  The trainer, like the report,
builds ``pred = model(listing_buffer)`` once in ``__init__`` and, for every mini-batch,
writes the batch into ``listing_buffer.data`` and backpropagates a loss on that same
``pred``.  Without the report's ``retain_graph=True`` the second batch fails with
"Trying to backward through the graph a second time".  Adam over the model.
"""
import torch
import torch.nn as nn

torch.manual_seed(23)

HPARAMS = {
    "n_listings": 192,
    "n_features": 9,      # floor area, rooms, age, distance to centre, ...
    "hidden": 32,
    "batch_size": 32,
    "epochs": 2,
    "lr": 2e-3,
}


def make_listings(n, d):
    x = torch.randn(n, d)
    coef = torch.tensor([1.5, 0.6, -0.4, -0.8, 0.3, 0.2, 0.0, 0.1, -0.2])
    log_price = x @ coef + 0.3 * torch.sin(2 * x[:, 0]) + 0.05 * torch.randn(n)
    return x, log_price.unsqueeze(1)


class AppraisalNet(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.price_head = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.price_head(self.body(x))


class AppraisalTrainer:
    def __init__(self, model, batch_size, n_features, lr):
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        self.criterion = nn.MSELoss()

    def train_step(self, xb, yb):
        self.optimizer.zero_grad()
        pred = self.model(xb)  # a fresh forward (and graph) at the new inputs
        loss = self.criterion(pred, yb)
        loss.backward()
        self.optimizer.step()
        return loss.item()


def main():
    x, y = make_listings(HPARAMS["n_listings"], HPARAMS["n_features"])
    model = AppraisalNet(HPARAMS["n_features"], HPARAMS["hidden"])
    trainer = AppraisalTrainer(model, HPARAMS["batch_size"], HPARAMS["n_features"], HPARAMS["lr"])
    bs = HPARAMS["batch_size"]
    for epoch in range(HPARAMS["epochs"]):
        perm = torch.randperm(x.shape[0])
        losses = []
        for start in range(0, x.shape[0], bs):
            idx = perm[start:start + bs]
            losses.append(trainer.train_step(x[idx], y[idx]))
        print(f"epoch {epoch}: mse {sum(losses) / len(losses):.4f}")


if __name__ == "__main__":
    main()
