"""Tabular regression with a TabNet-style regressor and a user-defined RMSE loss.

Reduced from https://github.com/dreamquark-ai/tabnet/issues/312: the author trains a
TabNetRegressor on tabular data and passes their own ``RMSELoss`` module as ``loss_fn``
to ``fit``. The regressor's training loop adds the attentive masks' sparsity
regulariser (weighted by ``lambda_sparse``) to the loss of every batch.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class RMSELoss(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        criterion = nn.MSELoss()
        eps = 1e-6
        loss = torch.sqrt(criterion(x, y) + eps)
        return loss


class AttentiveTransformer(nn.Module):
    def __init__(self, n_a, input_dim):
        super().__init__()
        self.fc = nn.Linear(n_a, input_dim, bias=False)
        self.bn = nn.BatchNorm1d(input_dim)

    def forward(self, priors, processed_feat):
        x = self.bn(self.fc(processed_feat))
        return F.softmax(x * priors, dim=-1)


class FeatTransformer(nn.Module):
    def __init__(self, input_dim, n_d, n_a):
        super().__init__()
        self.fc = nn.Linear(input_dim, 2 * (n_d + n_a))
        self.bn = nn.BatchNorm1d(2 * (n_d + n_a))

    def forward(self, x):
        return F.glu(self.bn(self.fc(x)))


class TabNetNoEmbeddings(nn.Module):
    def __init__(self, input_dim, output_dim, n_d=8, n_a=8, n_steps=3, gamma=1.3):
        super().__init__()
        self.n_d, self.n_steps, self.gamma = n_d, n_steps, gamma
        self.initial_bn = nn.BatchNorm1d(input_dim)
        self.initial_splitter = FeatTransformer(input_dim, n_d, n_a)
        self.feat_transformers = nn.ModuleList([FeatTransformer(input_dim, n_d, n_a) for _ in range(n_steps)])
        self.att_transformers = nn.ModuleList([AttentiveTransformer(n_a, input_dim) for _ in range(n_steps)])
        self.final_mapping = nn.Linear(n_d, output_dim, bias=False)

    def forward(self, x):
        res = 0
        x = self.initial_bn(x)
        prior = torch.ones(x.shape, device=x.device)
        M_loss = 0
        att = self.initial_splitter(x)[:, self.n_d :]
        for step in range(self.n_steps):
            M = self.att_transformers[step](prior, att)
            M_loss = M_loss + torch.mean(torch.sum(M * torch.log(M + 1e-15), dim=1))
            prior = (self.gamma - M) * prior
            out = self.feat_transformers[step](M * x)
            d = F.relu(out[:, : self.n_d])
            res = res + d
            att = out[:, self.n_d :]
        M_loss = M_loss / self.n_steps
        return self.final_mapping(res), M_loss


class TabNetRegressor:
    def __init__(self, input_dim, output_dim, lambda_sparse=1e-3, lr=2e-2):
        self.lambda_sparse = lambda_sparse
        self.network = TabNetNoEmbeddings(input_dim, output_dim)
        self.optimizer = torch.optim.Adam(self.network.parameters(), lr=lr)
        self.loss_fn = nn.MSELoss()

    def _train_batch(self, X, y):
        self.optimizer.zero_grad()
        output, M_loss = self.network(X)
        loss = self.loss_fn(output, y)
        # Add the overall sparsity loss
        loss -= self.lambda_sparse * M_loss
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def fit(self, X_train, y_train, loss_fn=None, max_epochs=5, batch_size=64):
        if loss_fn is not None:
            self.loss_fn = loss_fn
        self.network.train()
        for epoch in range(max_epochs):
            perm = torch.randperm(len(X_train))
            total = 0.0
            for start in range(0, len(X_train), batch_size):
                idx = perm[start : start + batch_size]
                total += self._train_batch(X_train[idx], y_train[idx])
            print(f"epoch {epoch} | loss {total:.4f}")


def make_data(n=256, n_features=10):
    X = torch.randn(n, n_features)
    w = torch.randn(n_features, 1)
    y = X @ w + 0.1 * torch.randn(n, 1)
    return X, y


if __name__ == "__main__":
    X_train, y_train = make_data()
    clf = TabNetRegressor(input_dim=X_train.shape[1], output_dim=1, lambda_sparse=1e-3)
    clf.fit(X_train, y_train, loss_fn=RMSELoss(), max_epochs=5, batch_size=64)
