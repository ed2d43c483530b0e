"""Visit-sequence EHR model: time-aware attention, next-visit code prediction, censored survival.

Report: https://github.com/MIV-XJTU/ARTrack/issues/60
In ARTrack's sequence head the token table is ``nn.Embedding(..., max_norm=1)`` and the output
layer is tied to it (``share_weight = word_embeddings.weight.T``). An embedding with max_norm
renormalises the rows it looks up in place, so a lookup made after the tied weight was used in
a matmul changes a tensor autograd saved; training stopped with "one of the variables needed
for gradient computation has been modified by an inplace operation", and the fix the thread
points to takes ``self.word_embeddings.weight.clone()`` before the tied projection. The training
setting is the writer's: a RETAIN-style model over diagnosis-code visits, walked visit by visit,
predicting the next visit's codes through the code table (tied output) and a discrete-time hazard
with right censoring.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_CODES, DIM, N_VISITS, CODES_PER_VISIT, HORIZON = 60, 16, 6, 4, 5


class VisitEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.codes = nn.Embedding(N_CODES + 1, DIM, padding_idx=N_CODES, max_norm=1.0)
        self.time_proj = nn.Linear(1, DIM)

    def forward(self, visit_codes, gap_days):
        v = self.codes(visit_codes).sum(dim=1)
        return v + torch.tanh(self.time_proj(torch.log1p(gap_days)[:, None]))


class TimeAwareRetain(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = VisitEncoder()
        self.alpha_rnn = nn.GRUCell(DIM, DIM)
        self.beta_rnn = nn.GRUCell(DIM, DIM)
        self.alpha_out = nn.Linear(DIM, 1)
        self.beta_out = nn.Linear(DIM, DIM)
        self.next_bias = nn.Parameter(torch.zeros(N_CODES + 1))
        self.hazard = nn.Linear(DIM, HORIZON)

    def forward(self, visits, gaps):
        code_weight = self.encoder.codes.weight.clone()
        b = visits.shape[0]
        h_a = visits.new_zeros(b, DIM, dtype=torch.float)
        h_b = visits.new_zeros(b, DIM, dtype=torch.float)
        embs, scores, gated, next_logits = [], [], [], []
        for t in range(N_VISITS):
            v = self.encoder(visits[:, t], gaps[:, t])
            h_a = self.alpha_rnn(v, h_a)
            h_b = self.beta_rnn(v, h_b)
            embs.append(v)
            scores.append(self.alpha_out(h_a))
            gated.append(torch.tanh(self.beta_out(h_b)) * v)
            next_logits.append(h_b @ code_weight.T + self.next_bias)
        alpha = torch.softmax(torch.cat(scores, dim=1), dim=1)
        context = (alpha[:, :, None] * torch.stack(gated, dim=1)).sum(dim=1)
        return self.hazard(context), torch.stack(next_logits[:-1], dim=1)


def censored_hazard_nll(hazard_logits, event_bin, observed):
    log_h = F.logsigmoid(hazard_logits)
    log_1mh = F.logsigmoid(-hazard_logits)
    bins = torch.arange(HORIZON)[None, :]
    survived = (log_1mh * (bins < event_bin[:, None])).sum(dim=1)
    event = log_h.gather(1, event_bin[:, None]).squeeze(1)
    return -(survived + observed * event).mean()


def next_visit_loss(next_logits, visits):
    target = torch.zeros(visits.shape[0], N_VISITS - 1, N_CODES + 1)
    target.scatter_(2, visits[:, 1:], 1.0)
    return F.binary_cross_entropy_with_logits(next_logits[..., :N_CODES], target[..., :N_CODES])


def make_cohort(n):
    visits = torch.randint(0, N_CODES, (n, N_VISITS, CODES_PER_VISIT))
    visits[:, :, -1] = torch.where(torch.rand(n, N_VISITS) < 0.4, N_CODES, visits[:, :, -1])
    gaps = torch.rand(n, N_VISITS) * 180
    risk = (visits < 10).float().mean(dim=(1, 2))
    event_bin = (HORIZON - 1 - (risk * 12).long()).clamp(0, HORIZON - 1)
    observed = (torch.rand(n) < 0.7).float()
    return visits, gaps, event_bin, observed


model = TimeAwareRetain()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
visits, gaps, event_bin, observed = make_cohort(64)

for epoch in range(2):
    for i in range(0, 64, 16):
        hazard_logits, next_logits = model(visits[i:i + 16], gaps[i:i + 16])
        surv_loss = censored_hazard_nll(hazard_logits, event_bin[i:i + 16], observed[i:i + 16])
        aux_loss = next_visit_loss(next_logits, visits[i:i + 16])
        loss = surv_loss + 0.3 * aux_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: survival {surv_loss.item():.4f} next-visit {aux_loss.item():.4f}")
