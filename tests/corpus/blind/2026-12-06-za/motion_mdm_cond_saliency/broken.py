"""MDM-style motion diffusion on synthetic joint sequences: a transformer denoiser predicts the clean
motion from the noised one and an action-condition token, trained with the sample loss plus
geometric losses (joint velocities); the gradient of the loss with respect to the condition token
and the noised motion is logged to check the condition is used.

Source: https://github.com/shap/shap/issues/725 -- shap's PyTorch DeepExplainer computed
``grads = [torch.autograd.grad(selected, x)[0] for x in X]``, one call per model input; the first call
freed the graph and the second raised "Trying to backward through the graph a second time". The
training setting is the writer's (the per-input gradients taken from the diffusion loss, then its
backward); the fix keeps the graph through the gradient calls.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

JOINTS, FRAMES, EMB, N_ACTIONS, BATCH, T_DIFF = 8, 16, 32, 4, 8, 100
betas = torch.linspace(1e-4, 0.02, T_DIFF)
alphas_bar = torch.cumprod(1 - betas, 0)


class MotionDenoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(JOINTS * 3, EMB)
        self.action = nn.Embedding(N_ACTIONS, EMB)
        self.time = nn.Embedding(T_DIFF, EMB)
        layer = nn.TransformerEncoderLayer(EMB, 4, 64, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(EMB, JOINTS * 3)

    def condition(self, actions, t):
        return (self.action(actions) + self.time(t)).unsqueeze(1)

    def forward(self, x_t, cond):
        h = torch.cat([cond, self.inp(x_t.flatten(2))], dim=1)
        return self.out(self.enc(h)[:, 1:]).view_as(x_t)


def sample_motion():
    phase = torch.rand(BATCH, 1, 1, 1) * 6.28
    frames = torch.arange(FRAMES).view(1, FRAMES, 1, 1).float()
    offsets = torch.randn(1, 1, JOINTS, 3)
    motion = offsets + 0.3 * torch.sin(0.4 * frames + phase)
    return motion, torch.randint(0, N_ACTIONS, (BATCH,))


def geometric_loss(pred, target):
    vel_pred, vel_gt = pred[:, 1:] - pred[:, :-1], target[:, 1:] - target[:, :-1]
    return F.mse_loss(vel_pred, vel_gt)


model = MotionDenoiser()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

for step in range(4):
    x0, actions = sample_motion()
    t = torch.randint(0, T_DIFF, (BATCH,))
    ab = alphas_bar[t].view(-1, 1, 1, 1)
    x_t = (ab.sqrt() * x0 + (1 - ab).sqrt() * torch.randn_like(x0)).requires_grad_(True)
    cond = model.condition(actions, t)
    pred = model(x_t, cond)
    loss = F.mse_loss(pred, x0) + 0.5 * geometric_loss(pred, x0)

    saliency = [torch.autograd.grad(loss, inp)[0].abs().mean().item() for inp in (cond, x_t)]

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, round(loss.item(), 4), "cond/motion saliency", [round(v, 6) for v in saliency])
