"""Recipe recommendation: a recipe embedding trained with hard-triplet mining.

Source: https://github.com/liorshk/facenet_pytorch/issues/9
In facenet_pytorch's training loop, the hard triplets are chosen in NumPy and the
selected embeddings are rebuilt from NumPy arrays:
``Variable(torch.from_numpy(out_a.cpu().data.numpy()[hard_triplets]).cuda())``. The
triplet loss on those tensors has no grad_fn, so ``loss.backward()`` raises "element 0
of tensors does not require grad and does not have a grad_fn". The issue's suggestion:
index the network outputs directly, ``out_a[hard_triplets]``.

Reduction: an ingredient-bag encoder maps recipes to embeddings; triplets are (recipe,
recipe the same user cooked, recipe from another cuisine cluster); the mining helper
keeps the triplets that violate the margin, selecting them in NumPy.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)
np.random.seed(7)

N_INGREDIENTS = 40
EMB_DIM = 16
MARGIN = 0.5


class RecipeEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.ingredient_emb = nn.EmbeddingBag(N_INGREDIENTS, 32, mode="mean")
        self.proj = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, EMB_DIM))

    def forward(self, ingredient_ids):
        return F.normalize(self.proj(self.ingredient_emb(ingredient_ids)), dim=1)


def sample_triplet_batch(batch_size, n_ing=6):
    cuisine = torch.randint(0, 4, (batch_size,))
    def draw(c):
        base = c[:, None] * 10
        return base + torch.randint(0, 10, (len(c), n_ing))
    anchors = draw(cuisine)
    positives = draw(cuisine)
    negatives = draw((cuisine + torch.randint(1, 4, (batch_size,))) % 4)
    return anchors, positives, negatives


def mine_hard_triplets(out_a, out_p, out_n, margin):
    d_ap = (out_a - out_p).pow(2).sum(1)
    d_an = (out_a - out_n).pow(2).sum(1)
    hard = (d_an - d_ap < margin).cpu().numpy().flatten()
    hard_triplets = np.where(hard == 1)[0]
    if len(hard_triplets) == 0:
        hard_triplets = np.arange(len(hard))
    sel_a = torch.from_numpy(out_a.detach().cpu().numpy()[hard_triplets])
    sel_p = torch.from_numpy(out_p.detach().cpu().numpy()[hard_triplets])
    sel_n = torch.from_numpy(out_n.detach().cpu().numpy()[hard_triplets])
    return sel_a, sel_p, sel_n


def train_epoch(encoder, optimizer, criterion, n_batches=5, batch_size=24):
    total = 0.0
    for _ in range(n_batches):
        anchors, positives, negatives = sample_triplet_batch(batch_size)
        out_a, out_p, out_n = encoder(anchors), encoder(positives), encoder(negatives)
        sel_a, sel_p, sel_n = mine_hard_triplets(out_a, out_p, out_n, MARGIN)
        triplet_loss = criterion(sel_a, sel_p, sel_n)
        optimizer.zero_grad()
        triplet_loss.backward()
        optimizer.step()
        total += triplet_loss.item()
    return total / n_batches


def main():
    encoder = RecipeEncoder()
    optimizer = torch.optim.SGD(encoder.parameters(), lr=0.1, momentum=0.9)
    criterion = nn.TripletMarginLoss(margin=MARGIN, p=2)
    for epoch in range(3):
        print(f"epoch {epoch}: triplet loss {train_epoch(encoder, optimizer, criterion):.4f}")


if __name__ == "__main__":
    main()
