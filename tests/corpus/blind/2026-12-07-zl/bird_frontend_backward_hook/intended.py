"""Bird-call classifier with a learnable filterbank front end, mixup and clip-level pooling.

Report: https://github.com/jacobgil/pytorch-grad-cam/pull/183 ("Use forward hook instead of
backward hook to avoid error"): with ``register_full_backward_hook`` on a target layer, a
network that then modifies that layer's output in place fails with "RuntimeError: Output 0 of
BackwardHookFunctionBackward is a view and is being modified in place"; the fix captures the
gradient with a forward hook that calls ``output.register_hook`` instead (see also
pytorch/pytorch#61519). Here the practitioner puts a full backward hook on the learnable
filterbank to log how much gradient reaches the front end, and the front end's output is then
log-compressed in place (``clamp_(...).log_()``), which raises that error on the first forward.
The error message's own advice (replace the in-place op by an out-of-place one) is the correction
kept here: the gradient log stays and the compression is computed out of place (the PR's forward
hook plus ``register_hook`` would not fire here, the filterbank output being an einsum view that
the in-place op rebases). The training setting (bioacoustics) is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_FFT, HOP, N_BANDS, N_CLASSES = 128, 32, 24, 5


class LearnableFilterbank(nn.Module):
    """Triangular-ish filters over the power spectrogram, centres and widths learnable."""

    def __init__(self, n_bins=N_FFT // 2 + 1, n_bands=N_BANDS):
        super().__init__()
        self.centers = nn.Parameter(torch.linspace(2.0, n_bins - 3.0, n_bands))
        self.log_width = nn.Parameter(torch.full((n_bands,), 1.2))
        self.register_buffer("bins", torch.arange(n_bins).float())

    def forward(self, power):  # B x F x T
        w = self.log_width.exp()[:, None]
        fb = torch.exp(-0.5 * ((self.bins[None, :] - self.centers[:, None]) / w) ** 2)
        return torch.einsum("bf,nft->nbt", fb, power)


class BirdNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(N_FFT))
        self.filterbank = LearnableFilterbank()
        self.cnn = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True))
        self.att = nn.Conv1d(32, N_CLASSES, 1)
        self.cla = nn.Conv1d(32, N_CLASSES, 1)

    def forward(self, wave):
        spec = torch.stft(wave, N_FFT, HOP, window=self.window, return_complex=True)
        bands = self.filterbank(spec.abs() ** 2)
        bands = torch.log(bands.clamp(min=1e-6))  # log compression, out of place
        h = self.cnn(bands.unsqueeze(1)).mean(2)  # B x C x T'
        att = torch.softmax(torch.tanh(self.att(h)), dim=-1)
        return (att * self.cla(h)).sum(-1)  # clip-level logits


grad_log = {}


def log_frontend_grad(module, grad_input, grad_output):
    grad_log.setdefault("frontend", []).append(grad_output[0].norm().item())


def mixup(x, y, alpha=0.4):
    lam = torch.distributions.Beta(alpha, alpha).sample()
    perm = torch.randperm(x.size(0))
    return lam * x + (1 - lam) * x[perm], lam * y + (1 - lam) * y[perm]


model = BirdNet()
model.filterbank.register_full_backward_hook(log_frontend_grad)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)

t = torch.arange(4000) / 8000.0
waves, labels = [], []
for i in range(24):
    c = i % N_CLASSES
    chirp = torch.sin(2 * torch.pi * (600 + 400 * c) * t * (1 + 0.3 * t)) * (torch.rand(1) + 0.5)
    waves.append(chirp + 0.3 * torch.randn_like(t))
    labels.append(F.one_hot(torch.tensor(c), N_CLASSES).float())
waves, labels = torch.stack(waves), torch.stack(labels)

for epoch in range(2):
    for k in range(0, 24, 8):
        x, y = mixup(waves[k:k + 8], labels[k:k + 8])
        logits = model(x)
        loss = F.binary_cross_entropy_with_logits(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f} frontend grad {grad_log['frontend'][-1]:.2e}")
