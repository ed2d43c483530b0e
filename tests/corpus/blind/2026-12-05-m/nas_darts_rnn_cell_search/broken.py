"""DARTS recurrent-cell search on a language model (first-order architect), ported to PyTorch 0.4+.

Reduced from https://github.com/quark0/darts/issues/56. The author runs the
DARTS RNN search (``rnn/train_search.py``) after porting it to PyTorch 0.4
(Variables gone, tensors everywhere): a weight-sharing recurrent cell whose
edges mix candidate activations with softmax-relaxed architecture weights
(``model.weights``, not registered as parameters), trained on a word-level
language-modelling corpus. Every iteration the ``Architect`` takes an Adam step
on the architecture weights against a search (validation) batch, then SGD
steps the network weights on a training batch. Hidden states for the training
and the search streams are carried across batches, as in the AWD-LSTM
recipe, and passed through ``repackage_hidden`` at each batch.

Synthetic corpus: random token ids batchified into columns.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(2)
np.random.seed(2)

NTOKENS = 50
EMSIZE = 16
NHID = 16
STEPS = 4
BPTT = 6
BATCH_SIZE = 4
PRIMITIVES = ["tanh", "relu", "sigmoid", "identity"]
ACTIVATIONS = {"tanh": torch.tanh, "relu": torch.relu, "sigmoid": torch.sigmoid, "identity": lambda x: x}


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, seq_len=BPTT):
    seq_len = min(seq_len, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].contiguous().view(-1)


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    # PyTorch 0.4: Variable and Tensor are merged, nothing to wrap any more
    if isinstance(h, torch.Tensor):
        return h
    return [repackage_hidden(v) for v in h]


class DARTSCellSearch(nn.Module):
    def __init__(self, ninp, nhid):
        super().__init__()
        self.nhid = nhid
        self._W0 = nn.Parameter(torch.empty(ninp + nhid, 2 * nhid).uniform_(-0.1, 0.1))
        self._Ws = nn.ParameterList([nn.Parameter(torch.empty(nhid, 2 * nhid).uniform_(-0.1, 0.1)) for _ in range(STEPS)])

    def forward(self, inputs, hidden, arch_weights):
        T = inputs.size(0)
        hiddens = []
        h = hidden[0]
        probs = F.softmax(arch_weights, dim=-1)
        for t in range(T):
            xh = torch.cat([inputs[t], h], dim=-1)
            c0, h0 = torch.split(xh.mm(self._W0), self.nhid, dim=-1)
            s0 = h + torch.sigmoid(c0) * (torch.tanh(h0) - h)
            states = [s0]
            for i in range(STEPS):
                c, hh = torch.split(states[-1].mm(self._Ws[i]), self.nhid, dim=-1)
                c = torch.sigmoid(c)
                mixed = sum(p * ACTIVATIONS[name](hh) for p, name in zip(probs[i], PRIMITIVES))
                states.append(states[-1] + c * (mixed - states[-1]))
            h = torch.mean(torch.stack(states[-STEPS:], -1), -1)
            hiddens.append(h)
        return torch.stack(hiddens), [h.unsqueeze(0)]


class RNNModelSearch(nn.Module):
    def __init__(self, ntoken, ninp, nhid):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = DARTSCellSearch(ninp, nhid)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid = nhid
        self.weights = (1e-3 * torch.randn(STEPS, len(PRIMITIVES))).requires_grad_()

    def arch_parameters(self):
        return [self.weights]

    def init_hidden(self, bsz):
        return [torch.zeros(1, bsz, self.nhid)]

    def forward(self, inputs, hidden):
        emb = self.encoder(inputs)
        output, hidden = self.rnn(emb, [hidden[0][0]], self.weights)
        logit = self.decoder(output.view(-1, self.nhid))
        return F.log_softmax(logit, dim=-1), hidden

    def _loss(self, hidden, inputs, targets):
        log_prob, hidden_next = self(inputs, hidden)
        loss = F.nll_loss(log_prob, targets)
        return loss, hidden_next


class Architect:
    def __init__(self, model, arch_lr=3e-3, arch_weight_decay=1e-3):
        self.model = model
        self.optimizer = torch.optim.Adam(
            self.model.arch_parameters(), lr=arch_lr, betas=(0.9, 0.999), weight_decay=arch_weight_decay
        )

    def step(self, hidden_valid, input_valid, target_valid):
        self.optimizer.zero_grad()
        hidden = self._backward_step(hidden_valid, input_valid, target_valid)
        self.optimizer.step()
        return hidden

    def _backward_step(self, hidden, input, target):
        arch_loss, hidden_next = self.model._loss(hidden, input, target)
        arch_loss.backward()
        return hidden_next


def train(model, architect, optimizer, train_data, search_data):
    hidden = model.init_hidden(BATCH_SIZE)
    hidden_valid = model.init_hidden(BATCH_SIZE)
    i = 0
    while i < train_data.size(0) - 1 - 1:
        model.train()
        data_valid, targets_valid = get_batch(search_data, i % (search_data.size(0) - 1))
        data, targets = get_batch(train_data, i)

        # Starting each batch, we detach the hidden state from how it was previously produced.
        hidden = repackage_hidden(hidden)
        hidden_valid = repackage_hidden(hidden_valid)

        hidden_valid = architect.step(hidden_valid, data_valid, targets_valid)

        optimizer.zero_grad()
        hidden = repackage_hidden(hidden)
        log_prob, hidden = model(data, hidden)
        raw_loss = F.nll_loss(log_prob, targets)
        raw_loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
        print(f"batch at {i}: loss {raw_loss.item():.3f}")
        i += BPTT


def main():
    corpus_train = torch.randint(0, NTOKENS, (400,))
    corpus_valid = torch.randint(0, NTOKENS, (200,))
    train_data = batchify(corpus_train, BATCH_SIZE)
    search_data = batchify(corpus_valid, BATCH_SIZE)

    model = RNNModelSearch(NTOKENS, EMSIZE, NHID)
    architect = Architect(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=20.0, weight_decay=5e-7)
    for epoch in range(1):
        train(model, architect, optimizer, train_data, search_data)


if __name__ == "__main__":
    main()
