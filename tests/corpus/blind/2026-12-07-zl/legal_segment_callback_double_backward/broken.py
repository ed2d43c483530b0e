"""Hierarchical long-document classifier for court judgments, trained segment by segment through a backward callback.

Source: https://github.com/TensorAuto/OpenTau/pull/530 (code review) -- the reviewed
``forward_sequence`` processed a long sequence in segments, called a backward callback with each
segment's loss *and* appended the same graph-carrying loss tensors to the terms it returned. Wired
the natural way (the callback is the backward function), each segment's graph is freed by the
callback, and the training script then backpropagates the returned losses on top of it: "Trying to
backward through the graph a second time" (and with retain_graph=True every gradient would count
twice). The reviewer's fix: keep the per-segment backward and return detached scalars for logging.
The training setting is the writer's: ECtHR-style judgments are split into segments of paragraphs;
a word-attention encoder turns each paragraph into a vector, a GRU memory carried across segments
(detached at segment boundaries, truncated BPTT) feeds a paragraph-rationale head on every segment
and the violation classifier on the last one; the loop uses the callback to free memory per segment.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
VOCAB, N_DOCS, N_PARAS, N_WORDS, SEG, N_LABELS = 200, 16, 12, 10, 4, 3


def make_judgments():
    """Token ids per paragraph; a paragraph is a rationale when it holds a 'trigger' token of the label."""
    docs = torch.randint(4, VOCAB, (N_DOCS, N_PARAS, N_WORDS))
    labels = torch.randint(0, N_LABELS, (N_DOCS,))
    rationale = torch.rand(N_DOCS, N_PARAS) < 0.3
    for d in range(N_DOCS):
        for p in range(N_PARAS):
            if rationale[d, p]:
                docs[d, p, torch.randint(0, N_WORDS, (1,))] = 1 + labels[d]
    return docs, labels, rationale.float()


class WordAttentionEncoder(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True, bidirectional=True)
        self.att = nn.Linear(2 * dim, 1)

    def forward(self, tokens):                      # (paras, words)
        h, _ = self.rnn(self.emb(tokens))
        a = torch.softmax(self.att(torch.tanh(h)).squeeze(-1), dim=-1)
        return (a.unsqueeze(-1) * h).sum(dim=1)      # (paras, 2*dim)


class SegmentedJudgmentModel(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.encoder = WordAttentionEncoder(dim)
        self.memory = nn.GRUCell(2 * dim, 2 * dim)
        self.rationale_head = nn.Linear(4 * dim, 1)
        self.violation_head = nn.Sequential(nn.Linear(2 * dim, dim), nn.ReLU(), nn.Linear(dim, N_LABELS))

    def forward_document(self, tokens, rationale, label, segment_backward_fn=None):
        mem = tokens.new_zeros(1, self.memory.hidden_size, dtype=torch.float32)
        rat_terms, cls_terms = [], []
        n_seg = tokens.shape[0] // SEG
        for s in range(n_seg):
            paras = self.encoder(tokens[s * SEG:(s + 1) * SEG])
            for p in paras:
                mem = self.memory(p.unsqueeze(0), mem)
            ctx = torch.cat([paras, mem.expand(paras.shape[0], -1)], dim=-1)
            seg_loss = F.binary_cross_entropy_with_logits(
                self.rationale_head(ctx).squeeze(-1), rationale[s * SEG:(s + 1) * SEG])
            rat_terms.append(seg_loss)
            if s == n_seg - 1:
                cls_loss = F.cross_entropy(self.violation_head(mem), label.view(1))
                cls_terms.append(cls_loss)
                seg_loss = seg_loss + cls_loss
            if segment_backward_fn is not None:
                segment_backward_fn(seg_loss)
            mem = mem.detach()                       # truncated BPTT across segments
        return {"rationale": torch.stack(rat_terms).mean(), "violation": torch.stack(cls_terms).sum()}


def backward_segment(seg_loss):
    seg_loss.backward()


docs, labels, rationale = make_judgments()
model = SegmentedJudgmentModel()
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-2)

for epoch in range(3):
    for d in torch.randperm(N_DOCS).tolist():
        optimizer.zero_grad()
        losses = model.forward_document(docs[d], rationale[d], labels[d], segment_backward_fn=backward_segment)
        total = losses["rationale"] + losses["violation"]
        total.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
    print(f"epoch {epoch} rationale {losses['rationale'].item():.3f} violation {losses['violation'].item():.3f}")
