"""Transformer classifier for distillation-column alarm floods, sinusoidal position table.

Source: https://github.com/Atcold/NYU-DLSP20/issues/765
("RuntimeError: a view of a leaf Variable that requires grad is being used in an
in-place operation.").  The reporter ran the course's transformer notebook: a
TransformerClassifier (word embeddings + fixed sinusoidal position embeddings,
one encoder layer of multi-head attention and a small feed-forward "CNN", max
pooling, a dense head) trained with Adam for sentiment classification.  Building
the model already fails: ``create_sinusoidal_embeddings`` writes the sine/cosine
table into ``self.position_embeddings.weight`` with slice assignments
(``E[:, 0::2] = ...``), and that weight is a leaf parameter that requires grad, so
PyTorch raises "a view of a leaf Variable that requires grad is being used in an
in-place operation".  The reporter found that wrapping the writes in
``torch.no_grad()`` (or cloning) works; the intent, stated in the notebook and by
the reporter, is a fixed (non-learned) position encoding.

Reduction: the same Embeddings / EncoderLayer / TransformerClassifier structure
and the same helper, applied to a chemical-plant setting: sequences of DCS alarm
tag ids raised during an alarm flood on a distillation column are classified into
the root cause (reflux pump trip, reboiler steam loss, feed upset, condenser
fouling).  Data are synthetic.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

HPARAMS = {
    "num_tags": 64,
    "seq_len": 20,
    "d_model": 32,
    "num_heads": 2,
    "conv_hidden_dim": 64,
    "num_causes": 4,
    "dropout": 0.1,
    "batch_size": 16,
    "floods": 48,
    "epochs": 2,
    "lr": 1e-3,
}


def create_sinusoidal_embeddings(nb_p, dim, E):
    theta = np.array([
        [p / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)]
        for p in range(nb_p)
    ])
    with torch.no_grad():
        E[:, 0::2] = torch.FloatTensor(np.sin(theta[:, 0::2]))
        E[:, 1::2] = torch.FloatTensor(np.cos(theta[:, 1::2]))
    E.requires_grad = False


class Embeddings(nn.Module):
    def __init__(self, d_model, vocab_size, max_position_embeddings):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, d_model, padding_idx=1)
        self.position_embeddings = nn.Embedding(max_position_embeddings, d_model)
        create_sinusoidal_embeddings(
            nb_p=max_position_embeddings,
            dim=d_model,
            E=self.position_embeddings.weight,
        )
        self.LayerNorm = nn.LayerNorm(d_model, eps=1e-12)

    def forward(self, input_ids):
        seq_length = input_ids.size(1)
        position_ids = torch.arange(seq_length, dtype=torch.long)
        position_ids = position_ids.unsqueeze(0).expand_as(input_ids)
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        return self.LayerNorm(embeddings)


class CNN(nn.Module):
    def __init__(self, d_model, hidden_dim, p):
        super().__init__()
        self.k1convL1 = nn.Linear(d_model, hidden_dim)
        self.k1convL2 = nn.Linear(hidden_dim, d_model)
        self.activation = nn.ReLU()
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        return self.k1convL2(self.dropout(self.activation(self.k1convL1(x))))


class EncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, conv_hidden_dim, p):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, num_heads, dropout=p, batch_first=True)
        self.cnn = CNN(d_model, conv_hidden_dim, p)
        self.layernorm1 = nn.LayerNorm(d_model, eps=1e-6)
        self.layernorm2 = nn.LayerNorm(d_model, eps=1e-6)

    def forward(self, x):
        attn_output, _ = self.mha(x, x, x)
        out1 = self.layernorm1(x + attn_output)
        return self.layernorm2(out1 + self.cnn(out1))


class TransformerClassifier(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.embedding = Embeddings(hp["d_model"], hp["num_tags"], hp["seq_len"])
        self.encoder = EncoderLayer(hp["d_model"], hp["num_heads"], hp["conv_hidden_dim"], hp["dropout"])
        self.dense = nn.Linear(hp["d_model"], hp["num_causes"])

    def forward(self, x):
        x = self.encoder(self.embedding(x))
        x, _ = torch.max(x, dim=1)
        return self.dense(x)


def make_floods(hp):
    """Each root cause raises its own cluster of tags first, then background chatter."""
    causes = torch.randint(0, hp["num_causes"], (hp["floods"],))
    tags = torch.randint(2, hp["num_tags"], (hp["floods"], hp["seq_len"]))
    first = 2 + causes.unsqueeze(1) * 8 + torch.randint(0, 8, (hp["floods"], 5))
    tags[:, :5] = first
    return tags, causes


def run_epoch(model, optimizer, tags, causes, hp):
    model.train()
    total, correct = 0.0, 0
    for start in range(0, tags.shape[0], hp["batch_size"]):
        x = tags[start:start + hp["batch_size"]]
        y = causes[start:start + hp["batch_size"]]
        optimizer.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        optimizer.step()
        total += loss.item() * x.shape[0]
        correct += (out.argmax(1) == y).sum().item()
    return total / tags.shape[0], correct / tags.shape[0]


def main():
    hp = HPARAMS
    tags, causes = make_floods(hp)
    model = TransformerClassifier(hp)
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])
    for epoch in range(hp["epochs"]):
        loss, acc = run_epoch(model, optimizer, tags, causes, hp)
        print(f"epoch {epoch}: loss {loss:.4f} acc {acc:.3f}")


if __name__ == "__main__":
    main()
