"""Compact convolutional transformer classifying minerals in petrographic thin-section patches.

Reduced from keras-team/keras-core issue #566, "possible bug: code working with tensorflow/jax
backends but not with pytorch" (https://github.com/keras-team/keras-core/issues/566). The
reporter was porting the Compact Convolutional Transformer (CCT) example to be
backend-agnostic; with the PyTorch backend `model.fit` failed with "RuntimeError: Trying to
backward through the graph a second time (or directly access saved tensors after they have
already been freed)". The example built its positional embeddings once, while building the
model: it ran the tokenizer on a dummy input to get the sequence length, then called an
`Embedding` layer on `arange(sequence_length)` and added that fixed tensor to the patch tokens.
With eager PyTorch the lookup's graph is made once and every training step backpropagates into
it. The reporter found the Embedding layer was the problem; the maintainers (fchollet, and the
port in keras-core PR #669) fixed it with a `PositionEmbedding` layer that does the lookup
inside its `call`, so each step builds its own.

Reduction: plain PyTorch, the same CCT layout (convolutional tokenizer, learned positional
embedding sized from a dummy pass in the constructor, transformer encoder, sequence pooling,
classifier) labels 3-channel cross-polarised thin-section patches as quartz, feldspar, biotite,
calcite or opaque ore minerals for a drill-core logging workflow. The positional embedding is
looked up once in `__init__`; the second optimizer step's backward fails.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(23)

HPARAMS = {
    "image_size": 24,
    "channels": 3,
    "projection_dim": 32,
    "heads": 4,
    "layers": 2,
    "minerals": 5,       # quartz, feldspar, biotite, calcite, opaque
    "patches": 48,
    "batch_size": 16,
    "epochs": 2,
    "lr": 1e-3,
    "weight_decay": 1e-4,
}


class CCTTokenizer(nn.Module):
    def __init__(self, channels, dim):
        super().__init__()
        self.convs = nn.Sequential(
            nn.Conv2d(channels, dim // 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(3, 2, 1),
            nn.Conv2d(dim // 2, dim, 3, padding=1), nn.ReLU(), nn.MaxPool2d(3, 2, 1),
        )

    def forward(self, images):
        return self.convs(images).flatten(2).transpose(1, 2)   # (batch, seq, dim)


class SequencePooling(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.attention = nn.Linear(dim, 1)

    def forward(self, tokens):
        weights = F.softmax(self.attention(tokens), dim=1)
        return (weights * tokens).sum(dim=1)


class PositionEmbedding(nn.Module):
    def __init__(self, sequence_length, dim):
        super().__init__()
        self.table = nn.Embedding(sequence_length, dim)
        self.register_buffer("positions", torch.arange(sequence_length), persistent=False)

    def forward(self, tokens):
        return tokens + self.table(self.positions)


class ThinSectionCCT(nn.Module):
    def __init__(self, hp):
        super().__init__()
        dim = hp["projection_dim"]
        self.tokenizer = CCTTokenizer(hp["channels"], dim)
        dummy = torch.zeros(1, hp["channels"], hp["image_size"], hp["image_size"])
        sequence_length = self.tokenizer(dummy).shape[1]
        self.position_embedding = PositionEmbedding(sequence_length, dim)
        layer = nn.TransformerEncoderLayer(dim, hp["heads"], dim_feedforward=2 * dim,
                                           dropout=0.1, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, hp["layers"], enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.pool = SequencePooling(dim)
        self.head = nn.Linear(dim, hp["minerals"])

    def forward(self, images):
        tokens = self.tokenizer(images)
        tokens = self.position_embedding(tokens)
        tokens = self.norm(self.encoder(tokens))
        return self.head(self.pool(tokens))


def thin_section_patches(n, channels, size):
    minerals = torch.randint(0, HPARAMS["minerals"], (n,))
    base = torch.tensor([[0.9, 0.9, 0.9], [0.8, 0.7, 0.6], [0.4, 0.25, 0.1],
                         [0.85, 0.8, 0.7], [0.05, 0.05, 0.05]])
    patches = base[minerals].view(n, channels, 1, 1).expand(n, channels, size, size).clone()
    patches += 0.15 * torch.randn(n, channels, size, size)
    return patches.clamp(0, 1), minerals


def run_experiment(model, patches, minerals, hp):
    optimizer = torch.optim.AdamW(model.parameters(), lr=hp["lr"], weight_decay=hp["weight_decay"])
    history = []
    for epoch in range(hp["epochs"]):
        model.train()
        epoch_loss = 0.0
        for start in range(0, patches.shape[0], hp["batch_size"]):
            logits = model(patches[start:start + hp["batch_size"]])
            loss = F.cross_entropy(logits, minerals[start:start + hp["batch_size"]], label_smoothing=0.1)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            epoch_loss += loss.item()
        history.append(epoch_loss)
        print(f"epoch {epoch}: loss {epoch_loss:.3f}")
    return history


def main():
    patches, minerals = thin_section_patches(HPARAMS["patches"], HPARAMS["channels"], HPARAMS["image_size"])
    cct_model = ThinSectionCCT(HPARAMS)
    run_experiment(cct_model, patches, minerals, HPARAMS)


if __name__ == "__main__":
    main()
