"""Tabular deep learning on a table with a text column (pytorch-frame layout).

Reduced from https://github.com/pyg-team/pytorch-frame/pull/229: a dataset with
numerical columns and one text column is materialized into a tensor frame once, the
text column encoded by a hashing text embedder (an ``nn.Embedding`` over hash bins that
is not part of the network); a tabular model is then trained on mini-batches of the
materialized frame.
"""

import zlib

import torch
import torch.nn as nn

torch.manual_seed(0)


class HashTextEmbedder:
    """Pre-encodes sentences into vectors by hashing them into ``num_hash_bins`` bins."""

    def __init__(self, out_channels, num_hash_bins=64):
        self.out_channels = out_channels
        self.num_hash_bins = num_hash_bins
        self.embedding = nn.Embedding(num_hash_bins, out_channels)

    def __call__(self, sentences):
        idx = torch.tensor([zlib.crc32(s.encode()) % self.num_hash_bins for s in sentences], dtype=torch.long)
        return self.embedding(idx)


class TensorFrame:
    def __init__(self, feat_dict, y):
        self.feat_dict = feat_dict
        self.y = y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, idx):
        return TensorFrame({k: v[idx] for k, v in self.feat_dict.items()}, self.y[idx])


class Dataset:
    def __init__(self, numerical, texts, y, text_embedder):
        self.numerical, self.texts, self.y = numerical, texts, y
        self.text_embedder = text_embedder
        self.tensor_frame = None

    def materialize(self):
        feat_dict = {"numerical": self.numerical, "embedding": self.text_embedder(self.texts)}
        self.tensor_frame = TensorFrame(feat_dict, self.y)
        return self


class ResNetTabular(nn.Module):
    def __init__(self, num_numerical, text_channels, channels=32, out_channels=2):
        super().__init__()
        self.num_encoder = nn.Linear(num_numerical, channels)
        self.text_encoder = nn.Linear(text_channels, channels)
        self.backbone = nn.Sequential(nn.LayerNorm(channels), nn.ReLU(), nn.Linear(channels, channels), nn.ReLU())
        self.decoder = nn.Linear(channels, out_channels)

    def forward(self, tf):
        x = self.num_encoder(tf.feat_dict["numerical"]) + self.text_encoder(tf.feat_dict["embedding"])
        x = x + self.backbone(x)
        return self.decoder(x)


def make_table(n=200, num_numerical=5):
    words = ["red", "green", "blue", "small", "large", "fast", "slow", "old", "new"]
    numerical = torch.randn(n, num_numerical)
    picks = torch.randint(len(words), (n, 3))
    texts = [" ".join(words[j] for j in row.tolist()) for row in picks]
    y = (numerical[:, 0] + (picks[:, 0] % 2).float() > 0.5).long()
    return numerical, texts, y


def train(model, optimizer, tensor_frame, epochs=2, batch_size=50):
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        perm = torch.randperm(len(tensor_frame))
        for start in range(0, len(tensor_frame), batch_size):
            tf = tensor_frame[perm[start : start + batch_size]]
            pred = model(tf)
            loss = loss_fn(pred, tf.y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} | loss {loss.item():.4f}")


if __name__ == "__main__":
    numerical, texts, y = make_table()
    dataset = Dataset(numerical, texts, y, text_embedder=HashTextEmbedder(out_channels=16)).materialize()
    model = ResNetTabular(num_numerical=numerical.shape[1], text_channels=16)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    train(model, optimizer, dataset.tensor_frame)
