"""AWD-LSTM-style word language model with weight drop, locked dropout and a hand-written
averaged SGD (the averaging starts at step T0, as torch.optim.ASGD's t0).

Report: https://github.com/pytorch/examples/pull/779 ("[word_language_model] Fix grad in-place
operation"): the language model's hand-written update writes into the parameters in place,
``p.add_(-lr, p.grad)``, outside ``torch.no_grad()``, and raises "a leaf Variable that requires
grad is being used in an in-place operation"; the older code did it through ``.data``. The
training setting (AWD-LSTM, the averaged weights swapped in for validation) is the writer's.

What the author was doing: training with SGD and gradient clipping; from step T0 on, an
average of the iterates is kept beside the model, and every validation copies the averaged
weights into the model, evaluates, and copies the raw weights back, the way the AWD-LSTM code
swaps ``prm.data`` with the optimiser's ``ax`` buffers, written here without ``.data``.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, EMB, HID, BPTT, BATCH = 60, 24, 32, 10, 8
LR, CLIP, EVAL_EVERY, T0 = 5.0, 0.25, 2, 2


class LockedDropout(nn.Module):
    def forward(self, x, p):
        if not self.training or p == 0:
            return x
        mask = x.new_empty(1, x.size(1), x.size(2)).bernoulli_(1 - p) / (1 - p)
        return x * mask


class WeightDropLSTM(nn.Module):
    """Single-layer LSTM whose hidden-to-hidden weights get DropConnect each forward."""

    def __init__(self, n_in, n_hid, weight_p):
        super().__init__()
        self.weight_ih = nn.Parameter(torch.randn(4 * n_hid, n_in) / math.sqrt(n_hid))
        self.weight_hh_raw = nn.Parameter(torch.randn(4 * n_hid, n_hid) / math.sqrt(n_hid))
        self.bias = nn.Parameter(torch.zeros(4 * n_hid))
        self.weight_p = weight_p

    def forward(self, x, state):
        w_hh = F.dropout(self.weight_hh_raw, self.weight_p, self.training)
        h, c = state
        outs = []
        for t in range(x.size(0)):
            gates = x[t] @ self.weight_ih.T + h @ w_hh.T + self.bias
            i, f, g, o = gates.chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs), (h, c)


class AWDLanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Embedding(VOCAB, EMB)
        self.rnn = WeightDropLSTM(EMB, HID, weight_p=0.3)
        self.proj = nn.Linear(HID, EMB)
        self.decoder = nn.Linear(EMB, VOCAB)
        self.decoder.weight = self.encoder.weight  # weight tying
        self.lockdrop = LockedDropout()

    def forward(self, tokens, state):
        emb = self.lockdrop(self.encoder(tokens), 0.2)
        out, state = self.rnn(emb, state)
        out = self.lockdrop(out, 0.3)
        return self.decoder(self.proj(out)), state

    def init_state(self, bsz):
        return (torch.zeros(bsz, HID), torch.zeros(bsz, HID))


def batchify(stream, bsz):
    n = stream.size(0) // bsz
    return stream[: n * bsz].view(bsz, n).T.contiguous()


def evaluate(model, data):
    model.eval()
    total, state = 0.0, model.init_state(data.size(1))
    with torch.no_grad():
        for i in range(0, data.size(0) - 1, BPTT):
            seq = min(BPTT, data.size(0) - 1 - i)
            logits, state = model(data[i:i + seq], state)
            total += seq * F.cross_entropy(logits.view(-1, VOCAB), data[i + 1:i + 1 + seq].reshape(-1)).item()
    model.train()
    return total / (data.size(0) - 1)


def update_average(model, avg_params, n_avg):
    with torch.no_grad():
        for p in model.parameters():
            avg_params[p].add_((p - avg_params[p]) / n_avg)


def evaluate_averaged(model, avg_params, data):
    """Validate with the averaged weights swapped in, then put the raw weights back."""
    saved = {}
    for p in model.parameters():
        saved[p] = p.detach().clone()
        p.copy_(avg_params[p])
    val_loss = evaluate(model, data)
    for p in model.parameters():
        p.copy_(saved[p])
    return val_loss


train_data = batchify(torch.randint(0, VOCAB, (2000,)), BATCH)
val_data = batchify(torch.randint(0, VOCAB, (400,)), 4)

model = AWDLanguageModel()
optimizer = torch.optim.SGD(model.parameters(), lr=LR, weight_decay=1.2e-6)
avg_params, n_avg = None, 0

state = model.init_state(BATCH)
for step, i in enumerate(range(0, train_data.size(0) - 1, BPTT), start=1):
    seq = min(BPTT, train_data.size(0) - 1 - i)
    inputs, targets = train_data[i:i + seq], train_data[i + 1:i + 1 + seq]
    state = tuple(s.detach() for s in state)
    optimizer.zero_grad()
    logits, state = model(inputs, state)
    loss = F.cross_entropy(logits.view(-1, VOCAB), targets.reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
    optimizer.step()

    if avg_params is None and step >= T0:  # averaging starts: the first iterate
        avg_params = {p: p.detach().clone() for p in model.parameters()}
        n_avg = 1
    elif avg_params is not None:  # running average of the iterates
        n_avg += 1
        update_average(model, avg_params, n_avg)

    if step % EVAL_EVERY == 0:
        if avg_params is not None:
            val_loss = evaluate_averaged(model, avg_params, val_data)
        else:
            val_loss = evaluate(model, val_data)
        print(f"step {step}: train {loss.item():.3f} val ppl {math.exp(val_loss):.1f} averaging={avg_params is not None}")
