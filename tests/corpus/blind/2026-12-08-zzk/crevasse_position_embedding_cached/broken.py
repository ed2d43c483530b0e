"""Compact Convolutional Transformer classifying glacier-surface SAR patches (crevassed ice, bare ice, firn, debris).

Source: https://github.com/keras-team/keras-core/pull/669
("Port Compact Convolutional Transformers to backend agnostic").

The author was porting the keras.io Compact Convolutional Transformer (CCT) example so
that it trains on the TensorFlow, JAX and Torch backends.  In the original example the
convolutional tokenizer hands back an ``Embedding`` layer and the sequence length, and the
model builder evaluates it once -- ``position_embeddings = embed_layer(positions)`` on a
constant ``range(seq_length)`` -- and adds that fixed tensor to every batch of tokens.
Under the Torch backend the first training step backwards through that tensor's graph and
frees it, and the second step fails with "Trying to backward through the graph a second
time" (the PR notes: "without the fix, it fails with Torch").  The fix in the PR replaces
it with a ``PositionEmbedding`` layer that owns the embedding table and looks the
positions up inside ``call()``, so every forward builds a fresh graph and the table is
trained.

Reduction: the example written as plain PyTorch (as the Torch backend runs it): a conv
tokenizer whose ``positional_embedding()`` returns the embedding layer and sequence length,
the position embeddings evaluated once in the model's constructor and added in
``forward``, transformer encoder blocks, sequence pooling and a linear head, trained with
AdamW on synthetic 16x16 two-channel (HH/HV) SAR patches whose class is set by a striped
(crevasse-like) or smooth texture.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)

HPARAMS = {
    "image_size": 16,
    "channels": 2,
    "num_classes": 4,
    "projection_dim": 32,
    "num_heads": 2,
    "transformer_layers": 2,
    "n_train": 64,
    "batch_size": 16,
    "epochs": 2,
    "lr": 1e-3,
    "weight_decay": 1e-4,
}


class CCTTokenizer(nn.Module):
    def __init__(self, in_ch, dims=(16, 32), kernel_size=3, pool=2):
        super().__init__()
        layers = []
        ch = in_ch
        for d in dims:
            layers += [
                nn.Conv2d(ch, d, kernel_size, padding=kernel_size // 2, bias=False),
                nn.ReLU(),
                nn.MaxPool2d(3, stride=pool, padding=1),
            ]
            ch = d
        self.conv_model = nn.Sequential(*layers)
        self.out_dim = ch

    def forward(self, images):
        x = self.conv_model(images)                      # (b, c, h, w)
        return x.flatten(2).transpose(1, 2)              # (b, h*w, c)

    def positional_embedding(self, image_size, in_ch):
        with torch.no_grad():
            dummy = self.forward(torch.ones(1, in_ch, image_size, image_size))
        sequence_length = dummy.shape[1]
        projection_dim = dummy.shape[-1]
        embed_layer = nn.Embedding(sequence_length, projection_dim)
        return embed_layer, sequence_length


class TransformerBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-5)
        self.attn = nn.MultiheadAttention(dim, heads, dropout=0.1, batch_first=True)
        self.norm2 = nn.LayerNorm(dim, eps=1e-5)
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Dropout(0.1), nn.Linear(dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        a, _ = self.attn(h, h, h, need_weights=False)
        x = x + a
        return x + self.mlp(self.norm2(x))


class CCT(nn.Module):
    def __init__(self, hp, positional_emb=True):
        super().__init__()
        self.tokenizer = CCTTokenizer(hp["channels"], dims=(16, hp["projection_dim"]))
        self.positional_emb = positional_emb
        if positional_emb:
            pos_embed, seq_length = self.tokenizer.positional_embedding(hp["image_size"], hp["channels"])
            self.pos_embed = pos_embed
            positions = torch.arange(0, seq_length)
            self.position_embeddings = pos_embed(positions)
        dim = hp["projection_dim"]
        self.blocks = nn.ModuleList(TransformerBlock(dim, hp["num_heads"]) for _ in range(hp["transformer_layers"]))
        self.norm = nn.LayerNorm(dim, eps=1e-5)
        self.attention_pool = nn.Linear(dim, 1)
        self.head = nn.Linear(dim, hp["num_classes"])

    def forward(self, images):
        encoded_patches = self.tokenizer(images)
        if self.positional_emb:
            encoded_patches = encoded_patches + self.position_embeddings
        for block in self.blocks:
            encoded_patches = block(encoded_patches)
        rep = self.norm(encoded_patches)
        weights = F.softmax(self.attention_pool(rep), dim=1)     # sequence pooling
        weighted = (weights.transpose(1, 2) @ rep).squeeze(1)
        return self.head(weighted)


def make_patches(hp):
    n, s = hp["n_train"], hp["image_size"]
    labels = torch.randint(0, hp["num_classes"], (n,))
    yy, xx = torch.meshgrid(torch.arange(s).float(), torch.arange(s).float(), indexing="ij")
    angle = torch.rand(n) * math.pi
    freq = torch.tensor([0.9, 0.0, 0.15, 0.4])[labels]
    stripes = torch.sin(freq[:, None, None] * (xx * torch.cos(angle)[:, None, None] + yy * torch.sin(angle)[:, None, None]))
    base = torch.tensor([0.2, 0.6, 1.0, -0.3])[labels]
    hh = base[:, None, None] + 0.5 * stripes + 0.3 * torch.randn(n, s, s)
    hv = 0.5 * base[:, None, None] + 0.3 * torch.randn(n, s, s)
    return torch.stack([hh, hv], dim=1), labels


def run_experiment(model, hp, images, labels):
    optimizer = torch.optim.AdamW(model.parameters(), lr=hp["lr"], weight_decay=hp["weight_decay"])
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    history = []
    for epoch in range(hp["epochs"]):
        model.train()
        perm = torch.randperm(len(images))
        for i in range(0, len(images), hp["batch_size"]):
            idx = perm[i:i + hp["batch_size"]]
            logits = model(images[idx])
            loss = criterion(logits, labels[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
        print(f"epoch {epoch}: loss {sum(history[-4:]) / 4:.4f}")
    return history


def main():
    hp = HPARAMS
    images, labels = make_patches(hp)
    model = CCT(hp)
    run_experiment(model, hp, images, labels)


if __name__ == "__main__":
    main()
