"""Bug localisation and repair: a code-token encoder with a pointer to the buggy token.

Source: https://github.com/xk-huang/yet-another-vectornet/issues/34 -- training
VectorNet, ``out = model(data)`` fails inside the author's ``masked_softmax``, which
masks the padded positions of each row by looping over the rows of the score tensor
(``for count, row in enumerate(X): row[int(valid_len[count]):] = -1e6``): "Output 0
of SliceBackward0 is a view and is being modified inplace. This view is the output of
a function that returns multiple views."

The report is a trajectory-prediction polyline subgraph; the training setting (a
variable-misuse style model that points at the buggy token of a padded token
sequence and classifies the repair) is the writer's. The masked softmax, written the
same way, is the report's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB = 50
MAX_LEN = 12
BATCH = 8
N_REPAIRS = 4
PAD = 0


def masked_softmax(X, valid_len):
    """Softmax over the last axis, ignoring the positions past each row's length."""
    shape = X.shape
    if valid_len.dim() == 1:
        valid_len = valid_len.repeat_interleave(shape[1]) if X.dim() == 3 else valid_len
    X = X.reshape(-1, shape[-1])
    for count, row in enumerate(X):
        row[int(valid_len[count]):] = -1e6
    return F.softmax(X.reshape(shape), dim=-1)


class TokenEncoder(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim, padding_idx=PAD)
        self.pos = nn.Embedding(MAX_LEN, dim)
        self.gru = nn.GRU(dim, dim, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(2 * dim, dim)

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1]).unsqueeze(0)
        h, _ = self.gru(self.embed(tokens) + self.pos(pos))
        return torch.tanh(self.proj(h))


class PointerRepairModel(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.encoder = TokenEncoder(dim)
        self.query = nn.Parameter(torch.randn(dim) * 0.1)
        self.pointer = nn.Linear(dim, dim)
        self.repair_head = nn.Linear(dim, N_REPAIRS)

    def forward(self, tokens, lengths):
        h = self.encoder(tokens)                            # b, t, d
        scores = self.pointer(h) @ self.query               # b, t
        attn = masked_softmax(scores, lengths)              # b, t
        pooled = (attn.unsqueeze(-1) * h).sum(1)
        return attn, self.repair_head(pooled)


def make_batch():
    lengths = torch.randint(5, MAX_LEN + 1, (BATCH,))
    tokens = torch.randint(1, VOCAB, (BATCH, MAX_LEN))
    positions = torch.arange(MAX_LEN).unsqueeze(0)
    tokens = tokens.masked_fill(positions >= lengths.unsqueeze(1), PAD)
    bug_pos = (torch.rand(BATCH) * lengths.float()).long()
    repair = tokens[torch.arange(BATCH), bug_pos] % N_REPAIRS
    return tokens, lengths, bug_pos, repair


model = PointerRepairModel()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)

for step in range(5):
    tokens, lengths, bug_pos, repair = make_batch()
    attn, repair_logits = model(tokens, lengths)
    loc_loss = F.nll_loss(torch.log(attn + 1e-9), bug_pos)
    repair_loss = F.cross_entropy(repair_logits, repair)
    loss = loc_loss + repair_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loc {loc_loss.item():.3f} repair {repair_loss.item():.3f}")
