"""Fragrance blending: hierarchical olfactive family / sub-family classifier with a hierarchy-dependency loss.

Reduced from Ugenteraan/Deep_Hierarchical_Classification issue #6
(https://github.com/Ugenteraan/Deep_Hierarchical_Classification/issues/6):
the repository's dependency loss ``D_l`` penalises a fine prediction that is
not a child of the coarse prediction. It is computed from ``torch.argmax`` of
both levels and a freshly built FloatTensor, so it carries no graph: the
reporter notes that argmax is not differentiable and that the model therefore
never learns from the dependency penalty, and the maintainer agreed. In the
repository the penalty is added to the layer loss, so nothing fails; here the
trainer balances the two objectives by taking one backward per objective
(for per-objective gradient norms), so the dependency loss's own backward is
where it fails.

The writer's setting: blends described by gas-chromatography peak areas of 20
materials are classified into an olfactive family (floral, woody, citrus,
oriental) and a sub-family (3 per family) (the report is CIFAR-100 superclass
/ class classification, the training setting is the writer's).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

N_MATERIALS, N_FAMILY, SUBS_PER = 20, 4, 3
N_SUB = N_FAMILY * SUBS_PER
PARENT = torch.arange(N_SUB) // SUBS_PER
CONFIG = {"lr": 3e-3, "beta": 0.8, "epochs": 3, "batch": 32}


class OlfactiveNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(N_MATERIALS, 48), nn.ReLU(), nn.Linear(48, 48), nn.ReLU())
        self.family_head = nn.Linear(48, N_FAMILY)
        self.sub_head = nn.Linear(48 + N_FAMILY, N_SUB)

    def forward(self, gc):
        h = self.trunk(gc)
        fam = self.family_head(h)
        sub = self.sub_head(torch.cat([h, fam.softmax(-1)], dim=1))
        return fam, sub


def layer_loss(fam_logits, sub_logits, fam_y, sub_y):
    return F.cross_entropy(fam_logits, fam_y) + F.cross_entropy(sub_logits, sub_y)


def dependency_loss(fam_logits, sub_logits, fam_y, sub_y):
    fam_pred = torch.argmax(fam_logits, dim=1)
    sub_pred = torch.argmax(sub_logits, dim=1)
    mismatch = torch.FloatTensor((PARENT[sub_pred] != fam_pred).float().tolist())
    wrong_fam = (fam_pred != fam_y).float()
    wrong_sub = (sub_pred != sub_y).float()
    return (mismatch * (1 + wrong_fam + wrong_sub)).mean()


def synth_blends(n):
    sub = torch.randint(0, N_SUB, (n,))
    centroids = torch.randn(N_SUB, N_MATERIALS) + 2.0 * torch.randn(N_FAMILY, N_MATERIALS)[PARENT]
    gc = (centroids[sub] + 0.7 * torch.randn(n, N_MATERIALS)).softmax(-1) * 10
    return gc, PARENT[sub], sub


def grad_norm(params):
    return torch.sqrt(sum((p.grad ** 2).sum() for p in params if p.grad is not None))


def train(cfg):
    net = OlfactiveNet()
    opt = torch.optim.Adam(net.parameters(), lr=cfg["lr"])
    gc, fam_y, sub_y = synth_blends(128)
    params = list(net.parameters())
    for epoch in range(cfg["epochs"]):
        for i in range(0, len(gc), cfg["batch"]):
            sl = slice(i, i + cfg["batch"])
            fam, sub = net(gc[sl])
            lloss = layer_loss(fam, sub, fam_y[sl], sub_y[sl])
            dloss = cfg["beta"] * dependency_loss(fam, sub, fam_y[sl], sub_y[sl])
            opt.zero_grad()
            lloss.backward(retain_graph=True)
            g_layer = grad_norm(params)
            dloss.backward()
            opt.step()
        print(f"epoch {epoch}: layer {lloss.item():.3f} dep {dloss.item():.3f} |g| {g_layer:.3f}")


if __name__ == "__main__":
    train(CONFIG)
