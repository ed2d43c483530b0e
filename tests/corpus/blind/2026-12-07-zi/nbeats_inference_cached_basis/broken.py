"""N-BEATS load forecasting: basis matrices cached during an inference-mode preview.

Report: https://github.com/huggingface/diffusers/issues/1658 ("Error When Training Dreambooth
after Saving Weights: RuntimeError: Inference tensors cannot be saved for backward"). The author's
trainer generates preview samples (under ``torch.inference_mode``) when it saves a checkpoint;
the next training forward of the same model then fails with "Inference tensors cannot be saved
for backward", because state the model built or cached during the preview is made of inference
tensors and is reused by the training graph. The training setting is the writer's: hourly
electricity load, an interpretable N-BEATS (trend and seasonality stacks with backcast/forecast
residuals and fixed polynomial/Fourier bases) whose blocks build their basis lazily on the first
forward and cache it; the first forward is the preview forecast the author draws before
training, inside ``torch.inference_mode()``.
"""
import math
import torch
import torch.nn as nn

torch.manual_seed(0)

BACK, HORIZON, HID, BATCH = 48, 24, 64, 32


def make_load_series(n_hours=24 * 60):
    t = torch.arange(n_hours, dtype=torch.float32)
    daily = 0.3 * torch.sin(2 * math.pi * t / 24) + 0.1 * torch.sin(4 * math.pi * t / 24)
    weekly = 0.15 * torch.sin(2 * math.pi * t / (24 * 7))
    return 1.0 + 0.0005 * t + daily + weekly + 0.05 * torch.randn(n_hours)


class BasisBlock(nn.Module):
    def __init__(self, kind, n_theta):
        super().__init__()
        self.kind, self.n_theta = kind, n_theta
        self.fc = nn.Sequential(nn.Linear(BACK, HID), nn.ReLU(), nn.Linear(HID, HID), nn.ReLU())
        self.theta_b = nn.Linear(HID, n_theta, bias=False)
        self.theta_f = nn.Linear(HID, n_theta, bias=False)
        self._basis = None                     # built on first use, then cached

    def basis(self):
        if self._basis is None:
            tb = torch.arange(BACK, dtype=torch.float32) / BACK
            tf = torch.arange(HORIZON, dtype=torch.float32) / HORIZON
            if self.kind == "trend":
                make = lambda t: torch.stack([t ** p for p in range(self.n_theta)])
            else:
                k = torch.arange(1, self.n_theta // 2 + 1, dtype=torch.float32)[:, None]
                make = lambda t: torch.cat([torch.cos(2 * math.pi * k * t), torch.sin(2 * math.pi * k * t)])
            self._basis = (make(tb), make(tf))
        return self._basis

    def forward(self, x):
        h = self.fc(x)
        b_basis, f_basis = self.basis()
        return self.theta_b(h) @ b_basis, self.theta_f(h) @ f_basis


class NBeats(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([BasisBlock("trend", 3), BasisBlock("trend", 3),
                                     BasisBlock("seasonality", 8), BasisBlock("seasonality", 8)])

    def forward(self, x):
        residual, forecast = x, 0.0
        for block in self.blocks:
            backcast, block_forecast = block(residual)
            residual = residual - backcast
            forecast = forecast + block_forecast
        return forecast


def windows(series, idx):
    x = torch.stack([series[i:i + BACK] for i in idx])
    y = torch.stack([series[i + BACK:i + BACK + HORIZON] for i in idx])
    return x, y


series = make_load_series()
split = int(0.8 * len(series))
train, val = series[:split], series[split - BACK:]
model = NBeats()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

# preview forecast of the untrained model on the last validation window (for the report plot)
with torch.inference_mode():
    x_val, y_val = windows(val, [len(val) - BACK - HORIZON])
    preview = model(x_val)
    print(f"untrained preview MAE {(preview - y_val).abs().mean().item():.3f}")

for step in range(5):
    idx = torch.randint(0, len(train) - BACK - HORIZON, (BATCH,)).tolist()
    x, y = windows(train, idx)
    loss = (model(x) - y).abs().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: MAE {loss.item():.4f}")
