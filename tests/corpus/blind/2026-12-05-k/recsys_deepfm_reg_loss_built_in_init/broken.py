"""DeepFM click-through-rate model trained with a Keras-like ``compile``/``fit`` (DeepCTR-Torch layout).

Source: https://github.com/shenweichen/DeepCTR-Torch/issues/88

The author runs the DeepFM example of the library on Criteo-style data: sparse
categorical fields embedded, a first-order linear part, an FM interaction term
and a DNN, binary cross-entropy summed over the batch plus an L2 penalty on the
embeddings and on the linear part, Adagrad, mini-batches from a DataLoader.
Here the data are synthetic: 6 sparse fields, 256 rows.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(1024)

FIELD_DIMS = [12, 8, 20, 5, 16, 9]
N_ROWS = 256


class Linear(nn.Module):
    """First-order part: one weight per feature value."""

    def __init__(self, field_dims, init_std=0.0001):
        super().__init__()
        self.embedding_dict = nn.ModuleDict({f"C{i}": nn.Embedding(dim, 1) for i, dim in enumerate(field_dims)})
        for tensor in self.embedding_dict.values():
            nn.init.normal_(tensor.weight, mean=0, std=init_std)

    def forward(self, X):
        sparse = [self.embedding_dict[f"C{i}"](X[:, i : i + 1].long()) for i in range(X.shape[1])]
        return torch.sum(torch.cat(sparse, dim=-1), dim=-1, keepdim=False)


class FM(nn.Module):
    def forward(self, inputs):
        square_of_sum = torch.pow(torch.sum(inputs, dim=1, keepdim=True), 2)
        sum_of_square = torch.sum(inputs * inputs, dim=1, keepdim=True)
        cross_term = square_of_sum - sum_of_square
        return 0.5 * torch.sum(cross_term, dim=2, keepdim=False)


class DeepFM(nn.Module):
    def __init__(self, field_dims, embedding_size=4, dnn_hidden_units=(32, 16), l2_reg_linear=1e-5,
                 l2_reg_embedding=1e-5, init_std=0.0001):
        super().__init__()
        self.reg_loss = torch.zeros((1,))
        self.field_dims = field_dims
        self.embedding_dict = nn.ModuleDict(
            {f"C{i}": nn.Embedding(dim, embedding_size) for i, dim in enumerate(field_dims)}
        )
        for tensor in self.embedding_dict.values():
            nn.init.normal_(tensor.weight, mean=0, std=init_std)
        self.linear_model = Linear(field_dims, init_std)
        self.fm = FM()
        layers, in_dim = [], len(field_dims) * embedding_size
        for units in dnn_hidden_units:
            layers += [nn.Linear(in_dim, units), nn.ReLU()]
            in_dim = units
        self.dnn = nn.Sequential(*layers)
        self.dnn_linear = nn.Linear(in_dim, 1, bias=False)

        self.add_regularization_loss(self.embedding_dict.parameters(), l2_reg_embedding)
        self.add_regularization_loss(self.linear_model.parameters(), l2_reg_linear)

    def add_regularization_loss(self, weight_list, weight_decay, p=2):
        reg_loss = torch.zeros((1,))
        for w in weight_list:
            l2_reg = torch.norm(w, p=p)
            reg_loss = reg_loss + l2_reg
        reg_loss = weight_decay * reg_loss
        self.reg_loss += reg_loss

    def forward(self, X):
        sparse_embedding_list = [self.embedding_dict[f"C{i}"](X[:, i : i + 1].long()) for i in range(X.shape[1])]
        logit = self.linear_model(X)
        fm_input = torch.cat(sparse_embedding_list, dim=1)
        logit = logit + self.fm(fm_input)
        dnn_input = torch.flatten(fm_input, start_dim=1)
        logit = logit + self.dnn_linear(self.dnn(dnn_input))
        return torch.sigmoid(logit)

    def compile(self, optimizer, loss):
        self.optim = torch.optim.Adagrad(self.parameters(), lr=0.01) if optimizer == "adagrad" else optimizer
        self.loss_func = F.binary_cross_entropy if loss == "binary_crossentropy" else loss

    def fit(self, x, y, batch_size=32, epochs=1, verbose=1):
        train_loader = DataLoader(TensorDataset(x, y), shuffle=True, batch_size=batch_size)
        model = self.train()
        loss_func = self.loss_func
        optim = self.optim
        for epoch in range(epochs):
            total_loss_epoch = 0.0
            for x_train, y_train in train_loader:
                x_batch = x_train.float()
                y_batch = y_train.float()

                y_pred = model(x_batch).squeeze()

                optim.zero_grad()
                loss = loss_func(y_pred, y_batch.squeeze(), reduction="sum")
                total_loss = loss + self.reg_loss

                total_loss_epoch += total_loss.item()
                total_loss.backward(retain_graph=True)
                optim.step()
            if verbose:
                print(f"Epoch {epoch + 1}/{epochs} - loss: {total_loss_epoch / len(x):.4f}")


if __name__ == "__main__":
    X = torch.stack([torch.randint(0, dim, (N_ROWS,)) for dim in FIELD_DIMS], dim=1)
    y = (torch.rand(N_ROWS) < 0.3).float()

    model = DeepFM(FIELD_DIMS)
    model.compile("adagrad", "binary_crossentropy")
    model.fit(X, y, batch_size=32, epochs=2, verbose=1)
