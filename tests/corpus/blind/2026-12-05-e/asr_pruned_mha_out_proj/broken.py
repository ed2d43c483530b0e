"""Reduced from https://github.com/speechbrain/speechbrain/issues/1160

The author fine-tuned a pretrained SpeechBrain Transformer ASR model after magnitude pruning: in an
`ASR(sb.core.Brain)` subclass, `prune_model(px)` collects the CNN's Conv2d weights and, for every
encoder layer, `self_att.att` "in_proj_weight", `self_att.att.out_proj` "weight" (marked "# problem in
this line") and the feed-forward weights, and calls torch.nn.utils.prune.global_unstructured. Training
then failed with "Trying to backward through the graph a second time". The same author's reduction
(https://github.com/pytorch/pytorch/issues/69353) and https://github.com/pytorch/pytorch/issues/78109
explain it: pruning replaces `out_proj.weight` by weight_orig * weight_mask and recomputes it in a
forward pre-hook of out_proj, but nn.MultiheadAttention reads out_proj.weight directly without calling
out_proj, so the hook never runs and every batch reuses the product computed at pruning time, whose
graph the first backward freed.

Here a small Brain-style trainer for a conv front end + Transformer encoder + CTC on synthetic filterbank
features, pruned the same way before fine-tuning.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune

torch.manual_seed(0)

N_MELS, D_MODEL, N_HEADS, N_LAYERS, VOCAB = 20, 32, 4, 2, 10  # token 0 is the CTC blank


class ConvFrontEnd(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(4, 4, 3, stride=1, padding=1)

    def forward(self, feats):  # (B, T, F) -> (B, T/2, 4 * F/2)
        x = F.leaky_relu(self.conv1(feats.unsqueeze(1)))
        x = F.leaky_relu(self.conv2(x))
        return x.permute(0, 2, 1, 3).flatten(2)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, nhead, dropout=0.0):
        super().__init__()
        self.att = nn.MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=True)

    def forward(self, x):
        out, _ = self.att(x, x, x, need_weights=False)
        return out


class PositionalwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ffn, dropout=0.1):
        super().__init__()
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ffn), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ffn, d_model))

    def forward(self, x):
        return self.ffn(x)


class TransformerEncoderLayer(nn.Module):
    def __init__(self, d_model, nhead, d_ffn):
        super().__init__()
        self.self_att = MultiHeadAttention(d_model, nhead)
        self.pos_ffn = PositionalwiseFeedForward(d_model, d_ffn)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x):
        x = self.norm1(x + self.self_att(x))
        return self.norm2(x + self.pos_ffn(x))


class TransformerEncoder(nn.Module):
    def __init__(self, n_in, d_model, nhead, num_layers):
        super().__init__()
        self.custom_src_module = nn.Linear(n_in, d_model)
        self.layers = nn.ModuleList([TransformerEncoderLayer(d_model, nhead, 2 * d_model) for _ in range(num_layers)])

    def forward(self, x):
        x = self.custom_src_module(x)
        for layer in self.layers:
            x = layer(x)
        return x


class ASR:
    """A minimal stand-in for speechbrain.core.Brain: modules, an optimizer class, fit/fit_batch."""

    def __init__(self, modules, opt_class, hparams):
        self.modules = nn.ModuleDict(modules)
        self.opt_class = opt_class
        self.hparams = hparams

    def prune_model(self, px):
        # Note that we only prune CNN and Transformer layers, not the output layer
        parameters_to_prune = []
        for m in self.modules.CNN.modules():
            if isinstance(m, nn.Conv2d):
                parameters_to_prune.append((m, "weight"))
        for i in range(self.hparams["num_encoder_layers"]):
            layer = self.modules.Transformer.layers[i]
            parameters_to_prune.append((layer.self_att.att, "in_proj_weight"))
            parameters_to_prune.append((layer.self_att.att.out_proj, "weight"))
            parameters_to_prune.append((layer.pos_ffn.ffn[0], "weight"))
            parameters_to_prune.append((layer.pos_ffn.ffn[3], "weight"))
        prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=px)

    def on_fit_start(self):
        self.prune_model(self.hparams["prune_px"])
        self.optimizer = self.opt_class(self.modules.parameters())

    def compute_forward(self, feats):
        src = self.modules.CNN(feats)
        enc_out = self.modules.Transformer(src)
        return F.log_softmax(self.modules.ctc_lin(enc_out), dim=-1)

    def compute_objectives(self, p_ctc, tokens, tokens_lens):
        input_lens = torch.full((p_ctc.shape[0],), p_ctc.shape[1], dtype=torch.long)
        return F.ctc_loss(p_ctc.transpose(0, 1), tokens, input_lens, tokens_lens, blank=0, zero_infinity=True)

    def fit_batch(self, batch):
        feats, tokens, tokens_lens = batch
        p_ctc = self.compute_forward(feats)
        loss = self.compute_objectives(p_ctc, tokens, tokens_lens)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return loss.detach()

    def fit(self, epochs, train_set):
        self.on_fit_start()
        self.modules.train()
        for epoch in range(epochs):
            avg = 0.0
            for i, batch in enumerate(train_set):
                avg += (self.fit_batch(batch).item() - avg) / (i + 1)
            print(f"epoch {epoch}: train loss {avg:.4f}")


def make_dataset(n_batches, batch_size=4, frames=48, label_len=6):
    data = []
    for _ in range(n_batches):
        tokens = torch.randint(1, VOCAB, (batch_size, label_len))
        # features: one filterbank band per token, held for frames // label_len frames, plus noise
        band = tokens.repeat_interleave(frames // label_len, dim=1)
        feats = F.one_hot(band * 2 % N_MELS, N_MELS).float() + 0.3 * torch.randn(batch_size, frames, N_MELS)
        data.append((feats, tokens, torch.full((batch_size,), label_len, dtype=torch.long)))
    return data


hparams = {"num_encoder_layers": N_LAYERS, "prune_px": 0.3}
modules = {
    "CNN": ConvFrontEnd(),
    "Transformer": TransformerEncoder(4 * N_MELS // 2, D_MODEL, N_HEADS, N_LAYERS),
    "ctc_lin": nn.Linear(D_MODEL, VOCAB),
}
train_set = make_dataset(4)

asr_brain = ASR(modules=modules, opt_class=lambda params: torch.optim.Adam(params, lr=1e-3), hparams=hparams)
asr_brain.fit(3, train_set)
