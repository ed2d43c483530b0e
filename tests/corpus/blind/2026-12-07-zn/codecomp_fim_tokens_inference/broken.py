"""Code completion: a small decoder-only transformer over code tokens, taught fill-in-the-middle.

Source: https://github.com/unslothai/unsloth-zoo/pull/137 -- `add_new_tokens` was decorated with
`@torch.inference_mode`, so the resized input embedding and lm_head it wrote were inference tensors;
full fine-tuning afterwards failed with "Inference tensors cannot be saved for backward". The PR
replaced the decorator with `torch.no_grad` around the weight surgery.

What the author was doing: a code model pretrained on plain left-to-right completion gets three new
special tokens (<fim_prefix>, <fim_suffix>, <fim_middle>) so it can learn infilling. A helper grows
the embedding table and the output head by three rows, initialising the new rows with the mean of the
old ones, under `torch.inference_mode()` because "it is only weight surgery". Then every parameter is
fine-tuned on FIM-formatted snippets. The training setting (a tiny code LM) is the writer's; the
mechanism (resize under inference_mode, then train) is the report's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

BASE_VOCAB = 40     # identifiers, keywords, punctuation of a toy language
D_MODEL = 32
SEQ = 24


class CodeLM(nn.Module):
    def __init__(self, vocab, d_model=D_MODEL, n_layers=2, n_heads=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(SEQ, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, ids):
        t = ids.shape[1]
        h = self.embed(ids) + self.pos[:t]
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        h = self.blocks(h, mask=mask, is_causal=True)
        return self.lm_head(self.norm(h))


@torch.inference_mode()
def add_special_tokens(model, n_new):
    """Grow embedding and lm_head by n_new rows, new rows = mean of the old ones."""
    old_emb = model.embed.weight
    old_head = model.lm_head.weight
    vocab, d = old_emb.shape
    new_emb = torch.empty(vocab + n_new, d)
    new_emb[:vocab] = old_emb
    new_emb[vocab:] = old_emb.mean(0, keepdim=True)
    new_head = torch.empty(vocab + n_new, d)
    new_head[:vocab] = old_head
    new_head[vocab:] = old_head.mean(0, keepdim=True)
    model.embed = nn.Embedding.from_pretrained(new_emb, freeze=False)
    model.lm_head = nn.Linear(d, vocab + n_new, bias=False)
    model.lm_head.weight = nn.Parameter(new_head)
    return vocab, vocab + 1, vocab + 2


def make_snippets(n):
    """Synthetic 'code': repeated statement patterns so the middle is predictable from both sides."""
    stmt = torch.randint(4, BASE_VOCAB, (n, 4))
    return stmt.repeat(1, SEQ // 4 + 1)[:, : SEQ - 3]


def to_fim(code, pre_id, suf_id, mid_id):
    """<pre> prefix <suf> suffix <mid> middle  (PSM ordering)."""
    n, L = code.shape
    a, b = 6, 12
    pre = torch.full((n, 1), pre_id)
    suf = torch.full((n, 1), suf_id)
    mid = torch.full((n, 1), mid_id)
    return torch.cat([pre, code[:, :a], suf, code[:, b:], mid, code[:, a:b]], dim=1)


model = CodeLM(BASE_VOCAB)
pre_id, suf_id, mid_id = add_special_tokens(model, 3)

optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
data = make_snippets(64)

for step in range(6):
    idx = torch.randint(0, data.shape[0], (16,))
    seq = to_fim(data[idx], pre_id, suf_id, mid_id)
    inp, tgt = seq[:, :-1], seq[:, 1:]
    logits = model(inp)
    # only the infilled middle is supervised
    weight = torch.zeros_like(tgt, dtype=torch.float)
    weight[:, -6:] = 1.0
    tok_loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), reduction="none")
    loss = (tok_loss * weight.reshape(-1)).sum() / weight.sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} fim loss {loss.item():.3f}")
