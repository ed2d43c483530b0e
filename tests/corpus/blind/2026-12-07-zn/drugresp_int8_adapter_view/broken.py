"""Drug-response prediction: frozen 8-bit cell-line encoder with trainable adapters, plus a drug encoder.

Source: https://github.com/gustavecortal/gpt-j-fine-tuning-example/issues/1 -- fine-tuning GPT-J with
8-bit frozen weights: `DequantizeAndLinear` is a custom autograd.Function that dequantises the
blockwise-quantised weight and returns the linear output, and `FrozenBNBLinear.forward` then does
`output += self.adapter(input)`. Training fails with "Output 0 of DequantizeAndLinearBackward is a
view and is being modified inplace ... created inside a custom Function". The accepted fix returns
`F.linear(...).clone()` from the Function's forward.

What the author was doing: a pathway-token transformer pretrained on expression profiles is too
large to fine-tune in full precision, so its linear layers are stored as int8 with per-block absmax
scales and frozen; small low-rank adapters are added to each frozen linear and trained together with
a fingerprint encoder for the drug and a response head (log IC50 regression). The training setting
(cell lines x drugs) is the writer's; the quantised-linear Function returning a view and the in-place
adapter add are the report's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_PATHWAYS, D, FP_BITS, BLOCK = 12, 32, 64, 16


def quantize_blockwise(w):
    flat = w.reshape(-1, BLOCK)
    absmax = flat.abs().amax(1, keepdim=True).clamp_min(1e-8)
    q = torch.round(flat / absmax * 127).to(torch.int8)
    return q, absmax


def dequantize_blockwise(q, absmax, shape):
    return (q.float() / 127 * absmax).reshape(shape)


class DequantizeAndLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w_q, absmax, out_features):
        w = dequantize_blockwise(w_q, absmax, (out_features, x.shape[-1]))
        ctx.save_for_backward(w_q, absmax)
        ctx.shape = (out_features, x.shape[-1])
        b, t, d = x.shape
        out = x.reshape(b * t, d) @ w.t()
        return out.view(b, t, out_features)

    @staticmethod
    def backward(ctx, grad_out):
        w_q, absmax = ctx.saved_tensors
        w = dequantize_blockwise(w_q, absmax, ctx.shape)
        return grad_out @ w, None, None, None


class FrozenQuantLinear(nn.Module):
    def __init__(self, linear, rank=4):
        super().__init__()
        q, absmax = quantize_blockwise(linear.weight.detach())
        self.register_buffer("w_q", q)
        self.register_buffer("absmax", absmax)
        self.out_features = linear.out_features
        self.adapter = nn.Sequential(nn.Linear(linear.in_features, rank, bias=False),
                                     nn.Linear(rank, linear.out_features, bias=False))
        nn.init.zeros_(self.adapter[1].weight)

    def forward(self, x):
        output = DequantizeAndLinear.apply(x, self.w_q, self.absmax, self.out_features)
        output += self.adapter(x)
        return output


class PathwayBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D, bias=False)
        self.proj = nn.Linear(D, D, bias=False)
        self.ff1, self.ff2 = nn.Linear(D, 2 * D, bias=False), nn.Linear(2 * D, D, bias=False)

    def forward(self, h):
        q, k, v = self.qkv(self.norm1(h)).chunk(3, dim=-1)
        att = torch.softmax(q @ k.transpose(1, 2) / D ** 0.5, dim=-1)
        h = h + self.proj(att @ v)
        return h + self.ff2(F.gelu(self.ff1(self.norm2(h))))


class CellLineEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(1, D)
        self.pathway_emb = nn.Parameter(torch.randn(N_PATHWAYS, D) * 0.1)
        self.blocks = nn.ModuleList([PathwayBlock() for _ in range(2)])

    def forward(self, scores):          # scores: (B, pathways) pathway activity
        h = self.inp(scores.unsqueeze(-1)) + self.pathway_emb
        for blk in self.blocks:
            h = blk(h)
        return h.mean(1)


def quantize_and_freeze(encoder):
    for blk in encoder.blocks:
        for name in ["qkv", "proj", "ff1", "ff2"]:
            setattr(blk, name, FrozenQuantLinear(getattr(blk, name)))
    # the int8 weights are buffers now; embeddings, norms and adapters stay trainable


cell_encoder = CellLineEncoder()          # stands in for the pretrained encoder
quantize_and_freeze(cell_encoder)
drug_encoder = nn.Sequential(nn.Linear(FP_BITS, 64), nn.ReLU(), nn.Linear(64, D))
head = nn.Sequential(nn.Linear(2 * D, 32), nn.ReLU(), nn.Linear(32, 1))

optimizer = torch.optim.Adam(list(cell_encoder.parameters()) + list(drug_encoder.parameters())
                             + list(head.parameters()), lr=1e-3)

n_cells, n_drugs = 30, 20
cell_scores = torch.randn(n_cells, N_PATHWAYS)
fingerprints = (torch.rand(n_drugs, FP_BITS) < 0.2).float()
true_w = torch.randn(N_PATHWAYS, FP_BITS) * 0.1
log_ic50 = cell_scores @ true_w @ fingerprints.t() + 0.1 * torch.randn(n_cells, n_drugs)

for step in range(5):
    ci = torch.randint(0, n_cells, (32,))
    di = torch.randint(0, n_drugs, (32,))
    z = torch.cat([cell_encoder(cell_scores[ci]), drug_encoder(fingerprints[di])], dim=-1)
    pred = head(z).squeeze(-1)
    loss = F.mse_loss(pred, log_ic50[ci, di])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} mse {loss.item():.4f}")
