"""Mamba-style selective-scan language model in plain PyTorch, trained with the generation cache left on.

Reduces https://github.com/huggingface/transformers/issues/29526 ("Mamba `slow_forward` uses inplace
operations causing errors in the backward pass"). The author trained a Mamba model through the
pure-PyTorch ``slow_forward`` with ``use_cache=True``. The mixer took the initial SSM state straight out
of the cache object (``ssm_state = cache_params.ssm_states[layer_idx]``), multiplied it by the first
discretised A in the recurrent scan, and at the end wrote the final state back into the cache with
``cache_params.ssm_states[layer_idx].copy_(ssm_state)``. The multiplication had saved the cache tensor
for backward, so the ``copy_`` bumped its version and ``loss.backward()`` failed with "one of the
variables needed for gradient computation has been modified by an inplace operation". The fix
(transformers PR #29563) clones the state read from the cache. The training setting (a small LM on
synthetic token sequences, cache created per batch as the model's generate-friendly default) is the
writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, D_MODEL, D_STATE, D_CONV, EXPAND, N_LAYERS = 16, 32, 8, 4, 2, 2
SEQ_LEN, BATCH, STEPS = 20, 8, 6


class MambaCache:
    """Per-layer conv and SSM states, as a generation loop would keep them."""

    def __init__(self, batch, n_layers, d_inner, d_state, d_conv):
        self.ssm_states = [torch.zeros(batch, d_inner, d_state) for _ in range(n_layers)]
        self.conv_states = [torch.zeros(batch, d_inner, d_conv) for _ in range(n_layers)]


class MambaMixer(nn.Module):
    def __init__(self, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.d_inner = EXPAND * D_MODEL
        self.dt_rank = max(1, D_MODEL // 16)
        self.in_proj = nn.Linear(D_MODEL, 2 * self.d_inner, bias=False)
        self.conv1d = nn.Conv1d(self.d_inner, self.d_inner, D_CONV, groups=self.d_inner, padding=D_CONV - 1)
        self.x_proj = nn.Linear(self.d_inner, self.dt_rank + 2 * D_STATE, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, self.d_inner)
        A = torch.arange(1, D_STATE + 1, dtype=torch.float32).repeat(self.d_inner, 1)
        self.A_log = nn.Parameter(torch.log(A))
        self.D = nn.Parameter(torch.ones(self.d_inner))
        self.out_proj = nn.Linear(self.d_inner, D_MODEL, bias=False)

    def forward(self, hidden_states, cache_params=None):
        batch, seq_len, _ = hidden_states.shape
        projected = self.in_proj(hidden_states).transpose(1, 2)  # (B, 2*d_inner, L)
        x, gate = projected.chunk(2, dim=1)
        if cache_params is not None:
            conv_state = F.pad(x, (D_CONV - seq_len, 0))
            cache_params.conv_states[self.layer_idx].copy_(conv_state)
        x = F.silu(self.conv1d(x)[..., :seq_len])

        # selective parameters: dt, B, C depend on the input
        ssm_params = self.x_proj(x.transpose(1, 2))
        dt, B, C = torch.split(ssm_params, [self.dt_rank, D_STATE, D_STATE], dim=-1)
        dt = F.softplus(self.dt_proj(dt)).transpose(1, 2)  # (B, d_inner, L)
        A = -torch.exp(self.A_log.float())  # (d_inner, N)
        discrete_A = torch.exp(A[None, :, None, :] * dt[:, :, :, None])  # (B, d_inner, L, N)
        deltaB_u = dt[:, :, :, None] * B[:, None, :, :] * x[:, :, :, None]

        if cache_params is not None:
            ssm_state = cache_params.ssm_states[self.layer_idx]
        else:
            ssm_state = torch.zeros(batch, self.d_inner, D_STATE)
        scan_outputs = []
        for i in range(seq_len):
            ssm_state = discrete_A[:, :, i, :] * ssm_state + deltaB_u[:, :, i, :]
            scan_outputs.append(torch.matmul(ssm_state, C[:, i, :].unsqueeze(-1))[:, :, 0])
        y = torch.stack(scan_outputs, dim=-1) + x * self.D[None, :, None]
        y = y * F.silu(gate)
        if cache_params is not None:
            cache_params.ssm_states[self.layer_idx].copy_(ssm_state)
        return self.out_proj(y.transpose(1, 2))


class MambaBlock(nn.Module):
    def __init__(self, layer_idx):
        super().__init__()
        self.norm = nn.LayerNorm(D_MODEL)
        self.mixer = MambaMixer(layer_idx)

    def forward(self, x, cache_params=None):
        return x + self.mixer(self.norm(x), cache_params)


class MambaLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.layers = nn.ModuleList([MambaBlock(i) for i in range(N_LAYERS)])
        self.norm_f = nn.LayerNorm(D_MODEL)
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, input_ids, use_cache=True):
        cache = None
        if use_cache:
            cache = MambaCache(input_ids.shape[0], N_LAYERS, EXPAND * D_MODEL, D_STATE, D_CONV)
        h = self.embed(input_ids)
        for layer in self.layers:
            h = layer(h, cache)
        return self.lm_head(self.norm_f(h)), cache


def make_batch():
    # a toy language: each sequence counts up modulo VOCAB from a random start, with some noise tokens
    start = torch.randint(0, VOCAB, (BATCH, 1))
    ids = (start + torch.arange(SEQ_LEN)) % VOCAB
    noise = torch.rand(BATCH, SEQ_LEN) < 0.1
    return torch.where(noise, torch.randint(0, VOCAB, (BATCH, SEQ_LEN)), ids)


model = MambaLM()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)

for step in range(STEPS):
    ids = make_batch()
    logits, _ = model(ids)
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), ids[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
