"""Dialect identification with the hand-unrolled RNN, corrected: states appended to lists, not written into rows.

Reduced from pytorch/pytorch issue #165621, "Feedback about RNN"
(https://github.com/pytorch/pytorch/issues/165621).

The author took the "Efficient implementation equivalent to the following" snippet from
the torch.nn.RNN documentation: a ``forward(x, hx)`` that reads the weights of an
``nn.RNN(10, 20, 2)`` through ``dict(rnn.named_parameters())`` and unrolls time and
layers by hand, writing each layer's new state into a preallocated ``h_t`` with
``h_t[layer] = torch.tanh(...)`` and copying ``h_t_minus_1 = h_t.clone()``. Running a
loss on its output and calling ``backward()`` fails: layer 1 reads ``h_t[0]`` (a view
of ``h_t``) into a matmul, which saves it, and the very next row assignment writes into
``h_t`` in place, so autograd reports that a variable needed for gradient computation
was modified by an inplace operation. The fix proposed in the issue and taken by the
docs pull requests (#173888, #184817) builds each time step's hidden states as a fresh
Python list, appends instead of assigning into rows, and stacks at the end.

Here the same hand-unrolled RNN, parameters still owned by an ``nn.RNN``, reads
character sequences of three dialects (synthetic Markov chains over a small alphabet)
and a linear head classifies the final top-layer state; Adam trains the embedding, the
RNN and the head over a few epochs of mini-batches.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(165621)

HPARAMS = {
    "alphabet": 12,
    "dialects": 3,
    "seq_len": 10,
    "embed_dim": 10,
    "hidden": 20,
    "layers": 2,
    "batch_size": 16,
    "batches": 4,
    "epochs": 3,
    "lr": 3e-3,
}


def make_corpus(hp, n_per_dialect=32):
    """Each dialect is a first-order Markov chain over characters with its own bias."""
    xs, ys = [], []
    for d in range(hp["dialects"]):
        logits = torch.randn(hp["alphabet"], hp["alphabet"]) * 1.5
        logits[:, d * 3:(d + 1) * 3] += 2.0
        trans = logits.softmax(dim=1)
        for _ in range(n_per_dialect):
            c = torch.randint(hp["alphabet"], (1,)).item()
            seq = [c]
            for _ in range(hp["seq_len"] - 1):
                c = torch.multinomial(trans[c], 1).item()
                seq.append(c)
            xs.append(torch.tensor(seq))
            ys.append(d)
    x = torch.stack(xs)
    y = torch.tensor(ys)
    order = torch.randperm(len(y))
    return x[order], y[order]


class DialectTagger(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.embed = nn.Embedding(hp["alphabet"], hp["embed_dim"])
        # The docs example keeps the weights in an nn.RNN and unrolls by hand.
        self.rnn = nn.RNN(hp["embed_dim"], hp["hidden"], hp["layers"])
        self.head = nn.Linear(hp["hidden"], hp["dialects"])

    def unrolled_rnn(self, x, hx=None):
        rnn = self.rnn
        params = dict(rnn.named_parameters())
        seq_len, batch_size, _ = x.size()
        if hx is None:
            hx = torch.zeros(rnn.num_layers, batch_size, rnn.hidden_size)
        h_t_minus_1 = list(hx)
        output = []
        for t in range(seq_len):
            h_t = []  # a fresh list of states for this time step
            for layer in range(rnn.num_layers):
                input_t = x[t] if layer == 0 else h_t[layer - 1]
                h_t.append(torch.tanh(
                    input_t @ params[f"weight_ih_l{layer}"].T
                    + h_t_minus_1[layer] @ params[f"weight_hh_l{layer}"].T
                    + params[f"bias_hh_l{layer}"]
                    + params[f"bias_ih_l{layer}"]
                ))
            output.append(h_t[-1])
            h_t_minus_1 = h_t
        output = torch.stack(output)
        return output, torch.stack(h_t)

    def forward(self, chars):
        x = self.embed(chars).transpose(0, 1)  # (seq, batch, embed)
        output, _ = self.unrolled_rnn(x)
        return self.head(output[-1])


def main():
    hp = HPARAMS
    x, y = make_corpus(hp)
    model = DialectTagger(hp)
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])

    for epoch in range(hp["epochs"]):
        correct = 0
        for b in range(hp["batches"]):
            sl = slice(b * hp["batch_size"], (b + 1) * hp["batch_size"])
            logits = model(x[sl])
            loss = F.cross_entropy(logits, y[sl])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            correct += (logits.argmax(1) == y[sl]).sum().item()
        seen = hp["batches"] * hp["batch_size"]
        print(f"epoch {epoch}: loss {loss.item():.4f} acc {correct / seen:.2f}")


if __name__ == "__main__":
    main()
