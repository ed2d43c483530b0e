"""Attention MIL for whole-slide classification: a TransMIL-style self-attention over patch
features, then gated attention pooling (Ilse et al.) into a slide-level logit.

Report: https://github.com/williamSYSU/TextGAN-PyTorch/pull/69 -- the relational memory's
multi-head attention splits a fused qkv projection with ``torch.split`` and scales the query
with ``q *= key_size ** -0.5``; the in-place scale on a view returned by split raises
"Output 0 of SplitWithSizesBackward0 is a view and is being modified inplace". The fix in the
pull request is the out-of-place ``q = q * scale``. The training setting (bags of patch
embeddings from a frozen extractor, slide-level labels) is the writer's; the attention block
and its in-place query scaling are the report's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

FEAT_DIM = 32
HIDDEN = 24
HEADS = 4
N_SLIDES = 12
MAX_PATCHES = 20


def make_bags():
    """Synthetic slides: a bag of patch embeddings, positive slides carry a few 'tumour' patches."""
    bags, labels = [], []
    tumour_dir = torch.randn(FEAT_DIM)
    for i in range(N_SLIDES):
        n = int(torch.randint(8, MAX_PATCHES, (1,)))
        x = torch.randn(n, FEAT_DIM)
        y = float(i % 2)
        if y:
            k = int(torch.randint(1, 4, (1,)))
            x[:k] += 1.5 * tumour_dir
        bags.append(x)
        labels.append(torch.tensor([y]))
    return bags, labels


class PatchSelfAttention(nn.Module):
    """Multi-head self-attention over the patches of one slide (fused qkv projection)."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        n, d = x.shape
        qkv = self.qkv(self.norm(x)).view(n, 3 * self.heads, self.head_dim).transpose(0, 1)
        q, k, v = torch.split(qkv, [self.heads, self.heads, self.heads], 0)
        # scale q with the key dimensionality
        q = q * self.head_dim ** -0.5
        attn = torch.softmax(q @ k.transpose(1, 2), dim=-1)
        h = (attn @ v).transpose(0, 1).reshape(n, d)
        return x + self.out(h)


class GatedAttentionPool(nn.Module):
    def __init__(self, dim, att_dim):
        super().__init__()
        self.V = nn.Linear(dim, att_dim)
        self.U = nn.Linear(dim, att_dim)
        self.w = nn.Linear(att_dim, 1)

    def forward(self, h):
        a = self.w(torch.tanh(self.V(h)) * torch.sigmoid(self.U(h)))  # (n, 1)
        a = torch.softmax(a.t(), dim=1)  # (1, n)
        return a @ h, a


class TransMIL(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(FEAT_DIM, HIDDEN), nn.ReLU())
        self.msa = PatchSelfAttention(HIDDEN, HEADS)
        self.pool = GatedAttentionPool(HIDDEN, 16)
        self.head = nn.Linear(HIDDEN, 1)

    def forward(self, bag):
        h = self.msa(self.embed(bag))
        z, a = self.pool(h)
        return self.head(z).view(1), a


def train_epoch(model, optimizer, bags, labels):
    model.train()
    total = 0.0
    for bag, y in zip(bags, labels):
        logit, _ = model(bag)
        loss = F.binary_cross_entropy_with_logits(logit, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(bags)


@torch.no_grad()
def evaluate(model, bags, labels):
    model.eval()
    correct = 0
    for bag, y in zip(bags, labels):
        logit, _ = model(bag)
        correct += int((logit > 0).float().item() == y.item())
    return correct / len(bags)


def main():
    bags, labels = make_bags()
    model = TransMIL()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3, weight_decay=1e-4)
    for epoch in range(3):
        loss = train_epoch(model, optimizer, bags, labels)
        acc = evaluate(model, bags, labels)
        print(f"epoch {epoch} loss {loss:.4f} acc {acc:.2f}")


if __name__ == "__main__":
    main()
