"""Deep supervised hashing with a small ViT encoder: the query is scaled in place after the qkv chunk.

Source: https://github.com/lucidrains/nystrom-attention/issues/13. The attention module split one
fused ``to_qkv`` projection with ``.chunk(3, dim=-1)``, rearranged each chunk into heads, then
wrote ``q *= self.scale``; on PyTorch 2.x this raises "Output 0 of ... is a view and is being
modified inplace. This view is the output of a function that returns multiple views" (the same
report came from TransMIL users). The fix in later versions scales out of place (``q = q * scale``).
The training setting is the writer's: a ViT-style hashing network for image retrieval (patch
embedding, attention blocks, a tanh-relaxed hash layer) trained with a DSH pairwise loss on
similar/dissimilar pairs plus a quantisation loss pulling the relaxed codes towards +-1.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

IMG, PATCH, DIM, HEADS, BITS, CLASSES = 16, 4, 32, 4, 12, 5


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.scale = self.dim_head ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, self.dim_head).transpose(1, 2) for t in (q, k, v))
        q *= self.scale
        attn = (q @ k.transpose(-1, -2)).softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, n, -1)
        return self.to_out(out)


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViTHash(nn.Module):
    def __init__(self):
        super().__init__()
        n = (IMG // PATCH) ** 2
        self.patch = nn.Conv2d(3, DIM, PATCH, stride=PATCH)
        self.cls = nn.Parameter(torch.zeros(1, 1, DIM))
        self.pos = nn.Parameter(torch.randn(1, n + 1, DIM) * 0.02)
        self.blocks = nn.Sequential(Block(DIM, HEADS), Block(DIM, HEADS))
        self.norm = nn.LayerNorm(DIM)
        self.hash_layer = nn.Linear(DIM, BITS)

    def forward(self, images):
        x = self.patch(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        x = self.norm(self.blocks(x))
        return torch.tanh(self.hash_layer(x[:, 0]))


def dsh_loss(u, labels, margin):
    sim = (labels[:, None] == labels[None, :]).float()
    dist = torch.cdist(u, u).pow(2)
    pair = 0.5 * sim * dist + 0.5 * (1 - sim) * F.relu(margin - dist)
    return pair.mean()


def make_batch(n):
    labels = torch.randint(0, CLASSES, (n,))
    images = torch.randn(n, 3, IMG, IMG) * 0.5 + prototypes[labels]
    return images, labels


prototypes = torch.randn(CLASSES, 3, IMG, IMG)
model = ViTHash()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
alpha = 0.1

for step in range(40):
    images, labels = make_batch(16)
    u = model(images)
    pair_loss = dsh_loss(u, labels, margin=2.0 * BITS)
    quant_loss = (u.abs() - 1).abs().mean()
    loss = pair_loss + alpha * quant_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        with torch.no_grad():
            codes = torch.sign(model(images))
            agree = (codes[:, None] == codes[None]).float().mean(-1)
        print(f"step {step} loss {loss.item():.3f} mean bit agreement {agree.mean().item():.3f}")
