"""Network-intrusion detection: a flow classifier trained on a loss balanced across attack families.

Source: https://github.com/laekov/fastmoe/issues/49

The report points at FastMoE's Megatron balance loss: the per-layer balance losses were
collected in a Python list and combined with ``torch.tensor(loss_list)``, which reads out
the values and builds a new leaf, dropping every ``grad_fn`` ("Balance loss is not
optimized"). The fix proposed in the thread is ``torch.cat([loss.unsqueeze(0) for loss in
loss_list])``. In FastMoE the balance term was added to a language-model loss, so nothing
failed loudly; here the combined value is the whole objective, so its backward raises
"element 0 of tensors does not require grad and does not have a grad_fn".

Reduction: a small MLP classifies network flows (synthetic NSL-KDD-like features) into
benign and four attack families. Because the rare families (R2L, U2R) would be drowned by
the benign and DoS flows, the training objective is the mean of the per-family cross
entropies, each computed on that family's flows in the batch; the per-family values are
gathered in a list and turned into a tensor with ``torch.tensor``, as in the report.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

FAMILIES = ["benign", "dos", "probe", "r2l", "u2r"]
FAMILY_SHARE = [0.55, 0.25, 0.12, 0.06, 0.02]
HPARAMS = {"n_flows": 600, "n_features": 20, "hidden": 64, "batch_size": 120, "lr": 1e-3, "epochs": 2}


def make_flows(n, n_features):
    labels = torch.multinomial(torch.tensor(FAMILY_SHARE), n, replacement=True)
    centres = torch.randn(len(FAMILIES), n_features) * 1.5
    feats = centres[labels] + torch.randn(n, n_features)
    feats[:, :4] = feats[:, :4].abs().log1p()  # byte / packet counts, log-scaled
    return feats, labels


class FlowDetector(nn.Module):
    def __init__(self, n_features, hidden, n_classes):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_features, hidden), nn.ReLU(), nn.Dropout(0.1),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, n_classes),
        )

    def forward(self, x):
        return self.net(x)


def family_balanced_loss(logits, labels):
    per_family = []
    for k in range(len(FAMILIES)):
        mask = labels == k
        if mask.any():
            per_family.append(F.cross_entropy(logits[mask], labels[mask]))
    return torch.tensor(per_family).mean()


def train_epoch(detector, opt, feats, labels, batch_size):
    detector.train()
    perm = torch.randperm(feats.shape[0])
    seen = 0.0
    for start in range(0, feats.shape[0], batch_size):
        idx = perm[start : start + batch_size]
        logits = detector(feats[idx])
        balanced_loss = family_balanced_loss(logits, labels[idx])
        opt.zero_grad()
        balanced_loss.backward()
        opt.step()
        seen += balanced_loss.item()
    return seen


@torch.no_grad()
def per_family_recall(detector, feats, labels):
    detector.eval()
    pred = detector(feats).argmax(dim=1)
    return {name: float((pred[labels == k] == k).float().mean()) for k, name in enumerate(FAMILIES) if (labels == k).any()}


def main():
    feats, labels = make_flows(HPARAMS["n_flows"], HPARAMS["n_features"])
    detector = FlowDetector(HPARAMS["n_features"], HPARAMS["hidden"], len(FAMILIES))
    opt = torch.optim.Adam(detector.parameters(), lr=HPARAMS["lr"])
    for epoch in range(HPARAMS["epochs"]):
        total = train_epoch(detector, opt, feats, labels, HPARAMS["batch_size"])
        print(f"epoch {epoch}: balanced loss {total:.3f}", per_family_recall(detector, feats, labels))


if __name__ == "__main__":
    main()
