"""Fashion outfit compatibility scoring with a learned garment-category table.

Source: https://discuss.pytorch.org/t/inplace-operation-changes-is-leaf-attribute/120297
The author tried several ways of writing into a tensor created with
``requires_grad=True`` (``c += 1``, ``c.add_(1)``, ``c.index_copy_(...)``,
``c[:] += 1``) and got "a leaf Variable that requires grad is being used in an
in-place operation" for most of them, asking which in-place writes are allowed
on such a tensor and why.

Reduction: an outfit-compatibility model (item visual features + a category
embedding table, set pooled into a compatibility logit). After each optimizer
step the project overwrites the rows of categories absent from the catalogue
with the mean of the seen rows, using ``index_copy_`` on the embedding weight.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

CATEGORIES = ["top", "bottom", "dress", "outerwear", "shoes", "bag", "jewelry", "hat", "scarf", "belt"]
UNSEEN = ["scarf", "belt"]
OPTS = {"n_outfits": 128, "items": 4, "feat_dim": 24, "emb_dim": 12, "hidden": 32,
        "batch": 16, "epochs": 2, "lr": 5e-3}


def synth_outfits(cfg):
    seen = [i for i, c in enumerate(CATEGORIES) if c not in UNSEEN]
    cats = torch.tensor(seen)[torch.randint(0, len(seen), (cfg["n_outfits"], cfg["items"]))]
    style = torch.randn(cfg["n_outfits"], 1, cfg["feat_dim"])
    feats = style + 0.7 * torch.randn(cfg["n_outfits"], cfg["items"], cfg["feat_dim"])
    compatible = torch.rand(cfg["n_outfits"]) > 0.5
    feats[~compatible] = torch.randn(int((~compatible).sum()), cfg["items"], cfg["feat_dim"]) * 1.5
    return feats, cats, compatible.float()


class OutfitScorer(nn.Module):
    def __init__(self, feat_dim, n_categories, emb_dim, hidden):
        super().__init__()
        self.category_emb = nn.Embedding(n_categories, emb_dim)
        self.item_mlp = nn.Sequential(nn.Linear(feat_dim + emb_dim, hidden), nn.GELU(), nn.Linear(hidden, hidden))
        self.pair_proj = nn.Linear(hidden, hidden, bias=False)
        self.out = nn.Linear(2 * hidden, 1)

    def forward(self, feats, cats):
        items = self.item_mlp(torch.cat([feats, self.category_emb(cats)], dim=-1))
        pooled = items.mean(dim=1)
        sim = torch.einsum("bih,bjh->bij", self.pair_proj(items), items).mean(dim=(1, 2))
        z = torch.cat([pooled, sim.unsqueeze(1).expand_as(pooled)], dim=1)
        return self.out(z).squeeze(1)


@torch.no_grad()
def refresh_unseen_categories(model, unseen_idx, seen_idx):
    fill = model.category_emb.weight[seen_idx].mean(dim=0, keepdim=True).expand(len(unseen_idx), -1)
    model.category_emb.weight.index_copy_(0, unseen_idx, fill)


def main(cfg=OPTS):
    feats, cats, labels = synth_outfits(cfg)
    unseen_idx = torch.tensor([CATEGORIES.index(c) for c in UNSEEN])
    seen_idx = torch.tensor([i for i, c in enumerate(CATEGORIES) if c not in UNSEEN])

    scorer = OutfitScorer(cfg["feat_dim"], len(CATEGORIES), cfg["emb_dim"], cfg["hidden"])
    adam = torch.optim.Adam(scorer.parameters(), lr=cfg["lr"])

    for epoch in range(cfg["epochs"]):
        perm = torch.randperm(cfg["n_outfits"])
        correct = 0
        for start in range(0, cfg["n_outfits"], cfg["batch"]):
            idx = perm[start:start + cfg["batch"]]
            logits = scorer(feats[idx], cats[idx])
            compat_loss = F.binary_cross_entropy_with_logits(logits, labels[idx])
            adam.zero_grad()
            compat_loss.backward()
            adam.step()
            refresh_unseen_categories(scorer, unseen_idx, seen_idx)
            correct += ((logits > 0).float() == labels[idx]).sum().item()
        print(f"epoch {epoch}: loss {compat_loss.item():.3f} acc {correct / cfg['n_outfits']:.3f}")


if __name__ == "__main__":
    main()
