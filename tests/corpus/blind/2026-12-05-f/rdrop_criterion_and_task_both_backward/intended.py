"""Reduced from https://github.com/dropreg/R-Drop/issues/8

R-Drop's fairseq example for summarization: the batch is fed twice (concatenated) through a
seq2seq model with dropout, and the loss is label-smoothed cross-entropy plus a symmetric KL
between the two dropout passes. The reporter followed the README verbatim and training failed
with "Trying to backward through the graph a second time" unless four lines were removed from
the task's train_step (rdrop_translation.py): "It seems like these lines are duplicated in
[rdrop_cross_entropy_loss.py], causing the error" -- the criterion's forward_reg already calls
optimizer.backward(loss). The maintainer: "we have fix this bug."

Here the task / criterion / optimizer-wrapper structure of fairseq, a small GRU encoder-decoder
with dropout, and synthetic source and target token ids.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, DIM, PAD, BOS = 50, 32, 0, 1


class GRUSeq2Seq(nn.Module):
    def __init__(self, dropout=0.3):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM, padding_idx=PAD)
        self.encoder = nn.GRU(DIM, DIM, batch_first=True)
        self.decoder = nn.GRU(DIM, DIM, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(DIM, VOCAB)

    def forward(self, src_tokens, src_lengths, prev_output_tokens):
        _, h = self.encoder(self.dropout(self.embed(src_tokens)))
        dec, _ = self.decoder(self.dropout(self.embed(prev_output_tokens)), h)
        return (self.out(self.dropout(dec)),)

    def get_normalized_probs(self, net_output, log_probs):
        if log_probs:
            return F.log_softmax(net_output[0], dim=-1)
        return F.softmax(net_output[0], dim=-1)

    def get_targets(self, sample, net_output):
        return sample["target"]


class FairseqAdam(object):
    """fairseq's optimizer wrapper: the trainer and the tasks call optimizer.backward(loss)."""

    def __init__(self, params, lr):
        self._optimizer = torch.optim.Adam(params, lr=lr)

    def backward(self, loss):
        loss.backward()

    def zero_grad(self):
        self._optimizer.zero_grad()

    def clip_grad_norm(self, max_norm, params):
        return torch.nn.utils.clip_grad_norm_(params, max_norm)

    def step(self):
        self._optimizer.step()


def label_smoothed_nll_loss(lprobs, target, epsilon, ignore_index=None, reduce=True):
    nll_loss = -lprobs.gather(dim=-1, index=target)
    smooth_loss = -lprobs.sum(dim=-1, keepdim=True)
    pad_mask = target.eq(ignore_index)
    nll_loss = nll_loss.masked_fill(pad_mask, 0.0)
    smooth_loss = smooth_loss.masked_fill(pad_mask, 0.0)
    if reduce:
        nll_loss = nll_loss.sum()
        smooth_loss = smooth_loss.sum()
    eps_i = epsilon / lprobs.size(-1)
    loss = (1.0 - epsilon) * nll_loss + eps_i * smooth_loss
    return loss, nll_loss


class RegLabelSmoothedCrossEntropyCriterion(object):
    def __init__(self, padding_idx, label_smoothing=0.1):
        self.padding_idx = padding_idx
        self.eps = label_smoothing

    def compute_kl_loss(self, model, net_output, pad_mask=None, reduce=True):
        net_prob = model.get_normalized_probs(net_output, log_probs=True)
        net_prob_tec = model.get_normalized_probs(net_output, log_probs=False)

        p, q = torch.split(net_prob, net_prob.size(0) // 2, dim=0)
        p_tec, q_tec = torch.split(net_prob_tec, net_prob_tec.size(0) // 2, dim=0)

        p_loss = F.kl_div(p, q_tec, reduction="none")
        q_loss = F.kl_div(q, p_tec, reduction="none")

        if pad_mask is not None:
            p_loss.masked_fill_(pad_mask, 0.0)
            q_loss.masked_fill_(pad_mask, 0.0)

        if reduce:
            p_loss = p_loss.sum()
            q_loss = q_loss.sum()

        return (p_loss + q_loss) / 2

    def forward_reg(self, model, sample, optimizer, reg_alpha, ignore_grad, reduce=True):
        sample_input = sample["net_input"]
        sample_concat_input = {
            "src_tokens": torch.cat([sample_input["src_tokens"], sample_input["src_tokens"].clone()], 0),
            "src_lengths": torch.cat([sample_input["src_lengths"], sample_input["src_lengths"].clone()], 0),
            "prev_output_tokens": torch.cat(
                [sample_input["prev_output_tokens"], sample_input["prev_output_tokens"].clone()], 0
            ),
        }

        net_output = model(**sample_concat_input)
        lprobs = model.get_normalized_probs(net_output, log_probs=True)
        lprobs = lprobs.view(-1, lprobs.size(-1))

        target = model.get_targets(sample, net_output)
        pad_mask = target.unsqueeze(-1).eq(self.padding_idx)
        target = torch.cat([target, target.clone()], dim=0)
        loss, nll_loss = label_smoothed_nll_loss(
            lprobs, target.view(-1, 1), self.eps, ignore_index=self.padding_idx, reduce=reduce
        )

        kl_loss = self.compute_kl_loss(model, net_output, pad_mask)
        loss += reg_alpha * kl_loss
        if ignore_grad:
            loss *= 0
        optimizer.backward(loss)

        sample_size = sample["ntokens"]
        logging_output = {"loss": loss.data, "nll_loss": nll_loss.data, "sample_size": sample_size}
        return loss, sample_size, logging_output


class RDropTranslationTask(object):
    def __init__(self, reg_alpha=0.7):
        self.reg_alpha = reg_alpha

    def train_step(self, sample, model, criterion, optimizer, update_num, ignore_grad=False):
        model.train()
        loss, sample_size, logging_output = criterion.forward_reg(model, sample, optimizer, self.reg_alpha, ignore_grad)
        return loss, sample_size, logging_output


def make_sample(bsz=8, src_len=12, tgt_len=10):
    src_lengths = torch.randint(src_len // 2, src_len + 1, (bsz,))
    src_tokens = torch.randint(2, VOCAB, (bsz, src_len)) * (torch.arange(src_len)[None] < src_lengths[:, None])
    tgt_lengths = torch.randint(tgt_len // 2, tgt_len + 1, (bsz,))
    target = torch.randint(2, VOCAB, (bsz, tgt_len)) * (torch.arange(tgt_len)[None] < tgt_lengths[:, None])
    prev_output_tokens = torch.cat([torch.full((bsz, 1), BOS), target[:, :-1]], dim=1)
    return {
        "net_input": {"src_tokens": src_tokens, "src_lengths": src_lengths, "prev_output_tokens": prev_output_tokens},
        "target": target,
        "ntokens": int(tgt_lengths.sum()),
    }


model = GRUSeq2Seq()
criterion = RegLabelSmoothedCrossEntropyCriterion(padding_idx=PAD)
task = RDropTranslationTask(reg_alpha=0.7)
optimizer = FairseqAdam(model.parameters(), lr=1e-3)
epoch_itr = [make_sample() for _ in range(4)]

num_updates = 0
for epoch in range(2):
    for sample in epoch_itr:
        optimizer.zero_grad()
        loss, sample_size, logging_output = task.train_step(sample, model, criterion, optimizer, num_updates)
        optimizer.clip_grad_norm(1.0, model.parameters())
        optimizer.step()
        num_updates += 1
    print(f"epoch {epoch}: loss {logging_output['loss'].item() / sample_size:.4f}")
