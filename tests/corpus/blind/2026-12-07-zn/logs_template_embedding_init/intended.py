"""System-log anomaly detection: next-log-key LSTM (DeepLog) with log-key embeddings initialised from template semantics.

Reduced from https://github.com/dasguptar/treelstm.pytorch/pull/26: the model's constructor
plugged pretrained GloVe vectors into its embedding with ``self.emb.weight.copy_(init_emb)``.
With the embedding frozen that works; trained with ``--freeze_embed`` off, the weight is a leaf
that requires grad and the constructor fails with "a leaf Variable that requires grad is being
used in an in-place operation" (the PR went back to copying into ``weight.data``).  Here the
log keys (Drain templates of HDFS-like logs) get their initial embedding from the mean word
vector of each template's tokens, LogRobust-style, and are fine-tuned with the next-key LSTM.
The training setting is the writer's; the initialisation is the report's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_KEYS = 12          # log templates found by the parser
WORD_DIM = 16
WINDOW = 8           # history of log keys fed to the model
TOP_G = 3            # a next key outside the top-g candidates is an anomaly


def template_vectors(n_keys, vocab=40, words_per_template=5):
    """Mean of (synthetic) word vectors over each template's tokens."""
    word_vecs = torch.randn(vocab, WORD_DIM)
    tokens = torch.randint(0, vocab, (n_keys, words_per_template))
    return word_vecs[tokens].mean(dim=1)


def make_sessions(n, length=20):
    """Block sessions following a few workflows (allocate -> receive -> write -> close ...)."""
    workflows = torch.randint(0, N_KEYS, (4, length))
    which = torch.randint(0, 4, (n,))
    seqs = workflows[which]
    noise = torch.rand(n, length) < 0.05
    return torch.where(noise, torch.randint(0, N_KEYS, (n, length)), seqs)


def windows(sessions):
    xs, ys = [], []
    for t in range(sessions.shape[1] - WINDOW):
        xs.append(sessions[:, t:t + WINDOW])
        ys.append(sessions[:, t + WINDOW])
    return torch.cat(xs), torch.cat(ys)


class NextKeyLSTM(nn.Module):
    def __init__(self, init_vectors, hidden=32, freeze_embed=False):
        super().__init__()
        self.emb = nn.Embedding(N_KEYS, WORD_DIM)
        if freeze_embed:
            self.emb.weight.requires_grad = False
        with torch.no_grad():
            self.emb.weight.copy_(init_vectors)
        self.lstm = nn.LSTM(WORD_DIM, hidden, num_layers=2, batch_first=True)
        self.fc = nn.Linear(hidden, N_KEYS)

    def forward(self, keys):
        out, _ = self.lstm(self.emb(keys))
        return self.fc(out[:, -1])


model = NextKeyLSTM(template_vectors(N_KEYS), freeze_embed=False)
optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-3)

x, y = windows(make_sessions(16))
for epoch in range(2):
    perm = torch.randperm(len(x))
    for i in range(0, len(x), 128):
        idx = perm[i:i + 128]
        logits = model(x[idx])
        loss = F.cross_entropy(logits, y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        top = model(x).topk(TOP_G, dim=-1).indices
        miss = (top != y[:, None]).all(-1).float().mean()
    print(f"epoch {epoch}: loss {loss.item():.4f}, windows flagged {miss.item():.3f}")
