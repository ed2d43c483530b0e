"""Abstractive summarisation with a pointer-generator network and a coverage loss.

Report: https://github.com/CUNY-CL/yoyodyne/pull/298 ("Reverts use of in-place dropout"): an
earlier change made the dropout after the LSTM in place to save memory; the LSTM keeps its
output for its backward, so the backward raised "one of the variables needed for gradient
computation has been modified by an inplace operation ... output 0 of CudnnRnnBackward0" (the
tensor was the input to dropout). The fix went back to an out-of-place dropout. (On CPU the
saving node is MkldnnRnnLayer.) The training setting is the writer's.

What the author was doing: a See et al. (2017) style summariser on synthetic article/summary
pairs, made small: a bidirectional LSTM encoder, a teacher-forced LSTM decoder run over the
whole summary at once, then per step an additive attention that reads the coverage vector, a
generation probability p_gen, and the final distribution over the extended vocabulary
(copying source tokens by scatter_add). Loss: NLL of the gold token plus the coverage loss
sum(min(attention, coverage)). The decoder's dropout is ``nn.Dropout(inplace=True)``.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, EXT, EMB, HID = 50, 10, 32, 48
SRC_LEN, TGT_LEN, BATCH, STEPS = 20, 6, 8, 6
COV_WEIGHT = 1.0


class PointerGenerator(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMB)
        self.encoder = nn.LSTM(EMB, HID, batch_first=True, bidirectional=True)
        self.reduce_h = nn.Linear(2 * HID, HID)
        self.reduce_c = nn.Linear(2 * HID, HID)
        self.decoder = nn.LSTM(EMB, HID, batch_first=True)
        self.dropout = nn.Dropout(0.2)
        self.W_h = nn.Linear(2 * HID, HID, bias=False)
        self.W_s = nn.Linear(HID, HID)
        self.w_c = nn.Linear(1, HID, bias=False)
        self.v = nn.Linear(HID, 1, bias=False)
        self.p_gen = nn.Linear(2 * HID + HID + EMB, 1)
        self.out1 = nn.Linear(3 * HID, HID)
        self.out2 = nn.Linear(HID, VOCAB)

    def encode(self, src):
        enc_out, (h, c) = self.encoder(self.embed(src.clamp(max=VOCAB - 1)))
        h = torch.relu(self.reduce_h(torch.cat([h[0], h[1]], dim=-1))).unsqueeze(0)
        c = torch.relu(self.reduce_c(torch.cat([c[0], c[1]], dim=-1))).unsqueeze(0)
        return enc_out, (h, c)

    def forward(self, src, src_ext, tgt_in):
        enc_out, state = self.encode(src)
        enc_feat = self.W_h(enc_out)
        dec_emb = self.embed(tgt_in)
        dec_out, _ = self.decoder(dec_emb, state)
        dec_out = self.dropout(dec_out)

        coverage = torch.zeros(src.shape)
        dists, cov_losses = [], []
        for t in range(tgt_in.size(1)):
            s_t = dec_out[:, t]
            e = self.v(torch.tanh(enc_feat + self.W_s(s_t).unsqueeze(1) + self.w_c(coverage.unsqueeze(-1)))).squeeze(-1)
            attn = F.softmax(e, dim=-1)
            cov_losses.append(torch.minimum(attn, coverage).sum(-1))
            coverage = coverage + attn
            context = torch.bmm(attn.unsqueeze(1), enc_out).squeeze(1)
            p_gen = torch.sigmoid(self.p_gen(torch.cat([context, s_t, dec_emb[:, t]], dim=-1)))
            vocab_dist = F.softmax(self.out2(self.out1(torch.cat([s_t, context], dim=-1))), dim=-1)
            extended = torch.cat([p_gen * vocab_dist, torch.zeros(src.size(0), EXT)], dim=-1)
            final = extended.scatter_add(1, src_ext, (1 - p_gen) * attn)
            dists.append(final)
        return torch.stack(dists, dim=1), torch.stack(cov_losses, dim=1)


def make_batch():
    src_ext = torch.randint(0, VOCAB + EXT, (BATCH, SRC_LEN))  # ids >= VOCAB are source OOVs
    pick = torch.randint(0, SRC_LEN, (BATCH, TGT_LEN))
    tgt = torch.gather(src_ext, 1, pick)  # extractive-ish summaries with OOV copies
    tgt_in = torch.cat([torch.zeros(BATCH, 1, dtype=torch.long), tgt[:, :-1].clamp(max=VOCAB - 1)], dim=1)
    return src_ext.clamp(max=VOCAB - 1), src_ext, tgt_in, tgt


model = PointerGenerator()
optimizer = torch.optim.Adagrad(model.parameters(), lr=0.15, initial_accumulator_value=0.1)

for step in range(STEPS):
    src, src_ext, tgt_in, tgt = make_batch()
    final_dists, cov = model(src, src_ext, tgt_in)
    gold = torch.gather(final_dists, 2, tgt.unsqueeze(-1)).squeeze(-1)
    nll = -torch.log(gold + 1e-12).mean()
    cov_loss = cov.mean()
    loss = nll + COV_WEIGHT * cov_loss
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 2.0)
    optimizer.step()
    print(f"step {step}: nll {nll.item():.3f} coverage {cov_loss.item():.3f}")
