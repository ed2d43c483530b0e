"""One-class anomaly detection with Deep SVDD, written the way a detector library's ``fit`` is.

Source: https://github.com/yzhao062/pyod/issues/606 (follow-up: https://github.com/yzhao062/pyod/pull/704).
The author uses a scikit-learn-style ``DeepSVDD`` detector: a bias-free MLP maps tabular samples
into a feature space, the hypersphere centre ``c`` is set from an initial forward pass, and ``fit``
minimises the mean squared distance to ``c`` plus a small weight-decay term over the network's
weights, with Adam, mini-batch by mini-batch, for several epochs. Scores are distances to ``c``.
"""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class InnerDeepSVDD(nn.Module):
    def __init__(self, n_features, hidden_neurons=(32, 16), dropout_rate=0.2):
        super().__init__()
        layers = []
        last = n_features
        for i, width in enumerate(hidden_neurons):
            layers.append(nn.Linear(last, width, bias=False))
            layers.append(nn.ReLU())
            if i < len(hidden_neurons) - 1:
                layers.append(nn.Dropout(dropout_rate))
            last = width
        self.net = nn.Sequential(*layers)
        self.c = None

    def _init_c(self, dataloader, eps=0.1):
        n_samples = 0
        c = torch.zeros(self.net[-2].out_features)
        self.eval()
        with torch.no_grad():
            for (x,) in dataloader:
                out = self.net(x)
                n_samples += out.shape[0]
                c += out.sum(dim=0)
        c /= n_samples
        c[(abs(c) < eps) & (c < 0)] = -eps
        c[(abs(c) < eps) & (c > 0)] = eps
        self.c = c

    def forward(self, x):
        return self.net(x)


class DeepSVDD:
    def __init__(self, epochs=3, batch_size=32, lr=1e-3, weight_decay_coef=1e-6, verbose=1):
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay_coef = weight_decay_coef
        self.verbose = verbose

    def fit(self, X):
        X = (X - X.mean(0)) / X.std(0)
        dataset = TensorDataset(X)
        dataloader = DataLoader(dataset, batch_size=self.batch_size, shuffle=True)
        self.model_ = InnerDeepSVDD(X.shape[1])
        self.model_._init_c(dataloader)
        optimizer = torch.optim.Adam(self.model_.parameters(), lr=self.lr)

        w_d = self.weight_decay_coef * sum(torch.linalg.norm(w) for w in self.model_.parameters())

        best_loss = float("inf")
        for epoch in range(self.epochs):
            self.model_.train()
            epoch_loss = 0.0
            for (batch_x,) in dataloader:
                outputs = self.model_(batch_x)
                dist = torch.sum((outputs - self.model_.c) ** 2, dim=-1)
                loss = torch.mean(dist) + w_d
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                epoch_loss += loss.item()
            if epoch_loss < best_loss:
                best_loss = epoch_loss
            if self.verbose:
                print(f"epoch {epoch + 1}/{self.epochs}: loss {epoch_loss:.4f}")
        return self

    def decision_function(self, X):
        X = (X - X.mean(0)) / X.std(0)
        self.model_.eval()
        with torch.no_grad():
            return torch.sum((self.model_(X) - self.model_.c) ** 2, dim=-1)


if __name__ == "__main__":
    inliers = torch.randn(240, 10) * 0.5
    outliers = torch.rand(16, 10) * 8 - 4
    X_train = torch.cat([inliers, outliers])
    detector = DeepSVDD(epochs=3, batch_size=32)
    detector.fit(X_train)
    scores = detector.decision_function(X_train)
    print("mean inlier score", scores[:240].mean().item(), "mean outlier score", scores[240:].mean().item())
