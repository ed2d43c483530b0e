"""Dental caries-risk classifier with class-wise feature mixup on the pooled embedding.

Reduced from the PyTorch forum thread
https://discuss.pytorch.org/t/runtimeerror-one-of-the-variables-needed-for-gradient-computation-has-been-modified-by-an-inplace-operation-torch-cuda-floattensor-32-768-which-is-output-0-of-tanhbackward-is-at-version-2-expected-version-0-instead-hint-enable-anomaly-detectio/137325
("RuntimeError: one of the variables needed for gradient computation has been modified
by an inplace operation: [torch.cuda.FloatTensor [32, 768]], which is output 0 of
TanhBackward, is at version 2; expected version 0 instead").

The author fine-tuned a BERT classifier and, inside ``forward``, augmented the batch with a
mixup of samples of the same label: ``result = self.bert(**input).pooler_output``, then
``temp_result = result.detach()`` and, per label, ``result[label_tensor] = lam *
temp_result[label_tensor] + (1 - lam) * temp_result[shuffled]``, before ``self.head`` and
``self.fc``.  The pooler output is the output of a tanh, which tanh's backward needs; the two
index assignments write into it (version 0 -> 2) and ``loss.backward()`` fails.  The author's
evident intent is to feed the mixed rows to the heads while the un-mixed computation stays
differentiable: write the mix into a copy (``result = result.clone()`` first), not into the
tensor autograd saved.

Reduction: the BERT encoder becomes a small MLP encoder over periodontal-chart and
bitewing-radiograph features of a patient, with the same tanh "pooler"; two classes
(low / high caries risk); the mixup code, the head/fc pair and the returned triple mirror the
thread.  Synthetic data, Adam over the whole model, several epochs of mini-batches.
"""
import copy
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HPARAMS = {
    "n_patients": 192,
    "n_features": 40,
    "hidden": 64,
    "pooled": 48,
    "head_dim": 32,
    "n_classes": 2,
    "batch_size": 32,
    "epochs": 3,
    "lr": 1e-3,
    "alpha": 0.5,
}
device = torch.device("cpu")


class ChartEncoder(nn.Module):
    """Stand-in for the pretrained text encoder: returns an object with ``pooler_output``."""

    class Output:
        def __init__(self, pooler_output):
            self.pooler_output = pooler_output

    def __init__(self, n_features, hidden, pooled):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_features, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU())
        self.pooler = nn.Linear(hidden, pooled)

    def forward(self, features):
        h = self.body(features)
        return self.Output(torch.tanh(self.pooler(h)))


class CariesRiskModel(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.bert = ChartEncoder(hp["n_features"], hp["hidden"], hp["pooled"])
        self.head = nn.Sequential(nn.Linear(hp["pooled"], hp["head_dim"]), nn.ReLU())
        self.fc = nn.Linear(hp["head_dim"], hp["n_classes"])
        self.alpha = hp["alpha"]

    def forward(self, input, labels):
        result = self.bert(**input).pooler_output
        label_one = [idx for idx, dat in enumerate(labels) if dat.item() == 0]
        label_two = [idx for idx, dat in enumerate(labels) if dat.item() == 1]
        lam = np.random.beta(self.alpha, self.alpha)
        temp_result = result.detach()  # shares memory; the mix itself should carry no gradient
        # replace each sample's pooled features by a mix with another sample of its label
        if label_one:
            label_one_tensor = torch.tensor(label_one).to(device)
            deep_label_one = copy.deepcopy(label_one)
            random.shuffle(deep_label_one)
            label_one_tensor_shuffle = torch.tensor(deep_label_one).to(device)
            result[label_one_tensor] = (
                lam * temp_result[label_one_tensor, :] + (1 - lam) * temp_result[label_one_tensor_shuffle, :]
            )
        if label_two:
            label_two_tensor = torch.tensor(label_two).to(device)
            deep_label_two = copy.deepcopy(label_two)
            random.shuffle(deep_label_two)
            label_two_tensor_shuffle = torch.tensor(deep_label_two).to(device)
            result[label_two_tensor] = (
                lam * temp_result[label_two_tensor, :] + (1 - lam) * temp_result[label_two_tensor_shuffle, :]
            )
        data = self.head(result)
        return data, self.fc(data), labels


def make_data(hp):
    x = torch.randn(hp["n_patients"], hp["n_features"])
    w = torch.randn(hp["n_features"])
    y = (x @ w + 0.3 * torch.randn(hp["n_patients"]) > 0).long()
    return x, y


def train_epoch(model, optimizer, x, y, hp, epoch):
    model.train()
    perm = torch.randperm(x.shape[0])
    total = 0.0
    for start in range(0, x.shape[0], hp["batch_size"]):
        idx = perm[start:start + hp["batch_size"]]
        batch = {"features": x[idx]}
        _, logits, labels = model(batch, y[idx])
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch}: loss {total:.4f}")


def main():
    torch.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
    hp = HPARAMS
    x, y = make_data(hp)
    model = CariesRiskModel(hp).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])
    for epoch in range(hp["epochs"]):
        train_epoch(model, optimizer, x, y, hp, epoch)


if __name__ == "__main__":
    main()
