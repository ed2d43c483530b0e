"""A Perceiver-style classifier whose latent array is processed by stateful leaky latent units.

Source: https://github.com/jeshraghian/snntorch/issues/250 -- a spiking CNN built from
leaky neurons that keep their membrane potential on the module (``init_hidden=True``) failed
on the second batch with "Trying to backward through the graph a second time"; the fix was
to move the time loop into the model's ``forward`` and reset the hidden states of the
network (``utils.reset(net)``) at its start, so each sample's state starts afresh. The report
is a spiking CNN; the training setting is the writer's.

What the author was doing: a learned latent array cross-attends once to a long input
sequence, then a shared latent self-attention block is iterated for a few steps. Between the
iterations the latents pass through leaky integrator units that keep their membrane state on
the module (``self.mem``), as spiking layers do. The state is created at the first call and
never reset, so the second batch starts from the first batch's membrane, whose graph the first
backward freed.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

SEQ_LEN = 96
IN_DIM = 6
N_LATENTS = 8
D = 32
N_CLASSES = 3
ITERS = 3
BATCH = 8
STEPS = 5


def synth_batch(n):
    y = torch.randint(0, N_CLASSES, (n,))
    t = torch.linspace(0, 1, SEQ_LEN).view(1, SEQ_LEN, 1)
    freq = (y.float() + 1.0).view(n, 1, 1) * 3.0
    x = torch.sin(6.28 * freq * t + torch.rand(n, 1, IN_DIM) * 6.28)
    return x + 0.1 * torch.randn(n, SEQ_LEN, IN_DIM), y


class LeakyLatent(nn.Module):
    """Leaky integrator over the latent iterations; the membrane is kept on the module."""

    def __init__(self, dim):
        super().__init__()
        self.beta_logit = nn.Parameter(torch.full((dim,), 1.0))
        self.mem = None

    def forward(self, x):
        if self.mem is None:
            self.mem = torch.zeros_like(x)
        self.mem = torch.sigmoid(self.beta_logit) * self.mem + x
        return torch.tanh(self.mem)


class Perceiver(nn.Module):
    def __init__(self):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(N_LATENTS, D) * 0.1)
        self.in_proj = nn.Linear(IN_DIM + 2, D)
        self.cross_attn = nn.MultiheadAttention(D, 2, batch_first=True)
        self.self_attn = nn.MultiheadAttention(D, 2, batch_first=True)
        self.ff = nn.Sequential(nn.LayerNorm(D), nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))
        self.leaky = LeakyLatent(D)
        self.head = nn.Linear(D, N_CLASSES)

    def forward(self, x):
        b = x.shape[0]
        pos = torch.linspace(-1, 1, x.shape[1]).view(1, -1, 1).expand(b, -1, 1)
        data = self.in_proj(torch.cat([x, torch.sin(3.14 * pos), torch.cos(3.14 * pos)], dim=-1))
        z = self.latents.unsqueeze(0).expand(b, -1, -1)
        z = z + self.cross_attn(z, data, data, need_weights=False)[0]
        for _ in range(ITERS):
            z = z + self.self_attn(z, z, z, need_weights=False)[0]
            z = z + self.ff(z)
            z = self.leaky(z)
        return self.head(z.mean(dim=1))


model = Perceiver()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)

for step in range(STEPS):
    x, y = synth_batch(BATCH)
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    acc = (logits.argmax(1) == y).float().mean().item()
    print(f"step {step}: loss {loss.item():.4f} acc {acc:.2f}")
