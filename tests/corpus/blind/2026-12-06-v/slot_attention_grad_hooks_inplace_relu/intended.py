"""Corrected: the activations after hooked layers are out of place (``nn.ReLU()``), the fix given for
backward hooks and in-place activations, so the gradient-norm hooks and the training both work.

Slot Attention autoencoder (Locatello et al. 2020) on synthetic multi-object images: a CNN encoder
with a soft position embedding, iterative slot refinement (attention normalised over slots, GRU + MLP
updates) and a spatial-broadcast decoder whose per-slot alpha masks compose the reconstruction.
Because slot attention is prone to gradient blow-ups, the script logs per-layer gradient norms with
module backward hooks (``register_full_backward_hook``) on the conv and GRU layers.

Reduced from https://github.com/rwightman/efficientdet-pytorch/issues/298: the author added PyTorch
backward hooks to the modules of an EfficientDet BiFPN to plot their gradients, and the forward pass
then failed: a full backward hook wraps the module's outputs in a ``BackwardHookFunction`` whose
outputs are views, and the in-place activation that follows (``ReLU6(inplace=True)`` there,
``ReLU(inplace=True)`` in this encoder and decoder) modifies such a view ("Output 0 of
BackwardHookFunction... is a view and is being modified inplace. This view was created inside a custom
Function"). The report is an object detector; the training setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

IMG, CH, N_SLOTS, SLOT_DIM, ITERS, DEC_RES = 16, 32, 3, 32, 3, 4
BATCH, STEPS = 8, 4


def make_scenes(n):
    """Black canvas with two coloured squares per image."""
    imgs = torch.zeros(n, 3, IMG, IMG)
    for i in range(n):
        for _ in range(2):
            size = int(torch.randint(3, 7, ()))
            y0, x0 = torch.randint(0, IMG - size, (2,)).tolist()
            imgs[i, :, y0:y0 + size, x0:x0 + size] = torch.rand(3, 1, 1)
    return imgs


def build_grid(res):
    r = torch.linspace(0.0, 1.0, res)
    gy, gx = torch.meshgrid(r, r, indexing="ij")
    g = torch.stack([gy, gx], dim=-1)
    return torch.cat([g, 1.0 - g], dim=-1).unsqueeze(0)  # (1, res, res, 4)


class SoftPositionEmbed(nn.Module):
    def __init__(self, dim, res):
        super().__init__()
        self.proj = nn.Linear(4, dim)
        self.register_buffer("grid", build_grid(res))

    def forward(self, x):  # x: (B, H, W, C)
        return x + self.proj(self.grid)


class SlotAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = dim ** -0.5
        self.slots_mu = nn.Parameter(torch.randn(1, 1, dim))
        self.slots_log_sigma = nn.Parameter(torch.zeros(1, 1, dim))
        self.to_q, self.to_k, self.to_v = (nn.Linear(dim, dim, bias=False) for _ in range(3))
        self.gru = nn.GRUCell(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))
        self.norm_in, self.norm_slots, self.norm_mlp = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, inputs):
        b, _, d = inputs.shape
        slots = self.slots_mu + self.slots_log_sigma.exp() * torch.randn(b, N_SLOTS, d)
        inputs = self.norm_in(inputs)
        k, v = self.to_k(inputs), self.to_v(inputs)
        for _ in range(ITERS):
            prev = slots
            q = self.to_q(self.norm_slots(slots))
            attn = torch.einsum("bid,bjd->bij", q, k).mul(self.scale).softmax(dim=1) + 1e-8
            attn = attn / attn.sum(dim=-1, keepdim=True)
            updates = torch.einsum("bjd,bij->bid", v, attn)
            slots = self.gru(updates.reshape(-1, d), prev.reshape(-1, d)).reshape(b, -1, d)
            slots = slots + self.mlp(self.norm_mlp(slots))
        return slots


class SlotAutoencoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(3, CH, 5, padding=2), nn.ReLU(),
            nn.Conv2d(CH, CH, 5, padding=2), nn.ReLU(),
            nn.Conv2d(CH, CH, 5, padding=2), nn.ReLU(),
        )
        self.enc_pos = SoftPositionEmbed(CH, IMG)
        self.mlp = nn.Sequential(nn.LayerNorm(CH), nn.Linear(CH, CH), nn.ReLU(), nn.Linear(CH, SLOT_DIM))
        self.slot_attention = SlotAttention(SLOT_DIM)
        self.dec_pos = SoftPositionEmbed(SLOT_DIM, DEC_RES)
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(SLOT_DIM, CH, 5, stride=2, padding=2, output_padding=1), nn.ReLU(),
            nn.ConvTranspose2d(CH, CH, 5, stride=2, padding=2, output_padding=1), nn.ReLU(),
            nn.Conv2d(CH, 4, 3, padding=1),
        )

    def forward(self, img):
        b = img.shape[0]
        feats = self.enc_pos(self.encoder(img).permute(0, 2, 3, 1))
        slots = self.slot_attention(self.mlp(feats.reshape(b, -1, CH)))
        x = slots.reshape(b * N_SLOTS, 1, 1, SLOT_DIM).expand(-1, DEC_RES, DEC_RES, -1)
        x = self.decoder(self.dec_pos(x).permute(0, 3, 1, 2))
        x = x.reshape(b, N_SLOTS, 4, IMG, IMG)
        rgb, alpha = x[:, :, :3], x[:, :, 3:].softmax(dim=1)
        return (rgb * alpha).sum(dim=1), alpha


class GradNormMonitor:
    """Records the norm of the gradient flowing out of each hooked layer."""

    def __init__(self, model):
        self.norms = {}
        for name, m in model.named_modules():
            if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d, nn.GRUCell)):
                m.register_full_backward_hook(self._hook(name))

    def _hook(self, name):
        def hook(module, grad_input, grad_output):
            self.norms[name] = grad_output[0].norm().item()
        return hook


model = SlotAutoencoder()
monitor = GradNormMonitor(model)
optimizer = torch.optim.Adam(model.parameters(), lr=4e-4)
warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 10))

for step in range(STEPS):
    images = make_scenes(BATCH)
    recon, masks = model(images)
    loss = F.mse_loss(recon, images)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    warmup.step()
    worst = max(monitor.norms, key=monitor.norms.get)
    print(f"step {step}: mse {loss.item():.4f} | largest grad norm {worst} {monitor.norms[worst]:.3e}")
