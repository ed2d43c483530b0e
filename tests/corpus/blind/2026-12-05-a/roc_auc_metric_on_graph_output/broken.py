"""A binary classifier trained in a torchbearer-style Trial that reports a running ROC AUC.

Source: https://github.com/pytorchbearer/torchbearer/issues/424 "Roc metric bug".
The user trained a model with torchbearer's ``roc_auc_score`` metric enabled; the metric hands
the predictions of the training batches to scikit-learn. Reduced: scikit-learn's
``roc_auc_score`` is replaced by a numpy implementation with the same signature, and the Trial
loop is written out.
"""

import numpy as np
import torch
import torch.nn as nn


def roc_auc_score(y_true, y_score):
    """Area under the ROC curve (Mann-Whitney U), numpy arrays in, float out."""
    order = np.argsort(y_score)
    ranks = np.empty(len(y_score))
    ranks[order] = np.arange(1, len(y_score) + 1)
    pos = y_true == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


class EpochLambda:
    """Accumulates y_pred and y_true over the epoch; every step_size batches computes the metric."""

    def __init__(self, name, metric_function, step_size=2):
        self.name = name
        self._metric_function = metric_function
        self._step_size = step_size
        self.reset()

    def reset(self):
        self._y_pred, self._y_true, self._steps = None, None, 0

    def process(self, state):
        y_pred, y_true = state["y_pred"], state["y_true"]
        self._y_pred = y_pred if self._y_pred is None else torch.cat([self._y_pred, y_pred])
        self._y_true = y_true if self._y_true is None else torch.cat([self._y_true, y_true])
        self._steps += 1
        if self._steps % self._step_size == 0:
            return {self.name: self._metric_function(self._y_pred, self._y_true)}
        return {}


class RocAucScore(EpochLambda):
    def __init__(self):
        def process(y):
            return y

        super().__init__(
            "roc_auc_score", lambda y_pred, y_true: roc_auc_score(process(y_true.cpu().numpy()), y_pred.cpu().numpy())
        )


class Trial:
    def __init__(self, model, optimizer, criterion, metrics):
        self.model, self.optimizer, self.criterion, self.metrics = model, optimizer, criterion, metrics

    def run(self, loader, epochs):
        for epoch in range(epochs):
            self.model.train()
            for metric in self.metrics:
                metric.reset()
            for x, y_true in loader:
                self.optimizer.zero_grad()
                y_pred = self.model(x).squeeze(1)
                loss = self.criterion(y_pred, y_true)
                loss.backward()
                self.optimizer.step()
                state = {"y_pred": y_pred, "y_true": y_true, "loss": loss}
                logs = {}
                for metric in self.metrics:
                    logs.update(metric.process(state))
                print(epoch, round(loss.item(), 4), logs)


if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(64, 8)
    y = (x[:, 0] + 0.5 * torch.randn(64) > 0).float()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8, shuffle=True)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    trial = Trial(model, optimizer, nn.BCELoss(), metrics=[RocAucScore()])
    trial.run(loader, epochs=2)
