"""Violin tuning: a small retuning network trained with a perceptual spectral distance written for numpy.

Source: https://github.com/pranaymanocha/PerceptualAudio/issues/14 ("expected np.ndarray (got Tensor)").
The author swapped MSELoss for the CDPAM perceptual metric as the training loss, but its ``forward``
expected numpy arrays, so the predictions went through numpy to reach it: "When i transform to numpy I am
loosing the gradient which I need for training." The author's plan was to rewrite the metric to take
tensors.

Reduction: the report is speech/audio enhancement with CDPAM; the training setting is the writer's. A 1-D
conv network maps a frame of a slightly out-of-tune open string (a harmonic tone a few cents off A, D, G
or E) to the frame of the in-tune string; the loss is a log-spectral distance helper written with
``numpy.fft`` for the evaluation scripts, called on the prediction converted to numpy and wrapped back
into a tensor.
"""
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(2)

SR = 8000
FRAME = 512
OPEN_STRINGS_HZ = [196.0, 293.66, 440.0, 659.25]
TRAIN = {"batch": 16, "steps": 5, "lr": 1e-3, "max_cents": 40.0, "n_harmonics": 6}


def string_frame(f0, n_harmonics, phase):
    t = torch.arange(FRAME) / SR
    wave = torch.zeros(FRAME)
    for k in range(1, n_harmonics + 1):
        wave += (0.7 ** k) * torch.sin(2 * np.pi * k * f0 * t + phase)
    return wave


def detuned_pairs(batch):
    """Frames of detuned open strings (input) and of the same strings in tune (target)."""
    idx = torch.randint(0, len(OPEN_STRINGS_HZ), (batch,))
    cents = (2 * torch.rand(batch) - 1) * TRAIN["max_cents"]
    phase = 2 * np.pi * torch.rand(batch)
    noisy, clean = [], []
    for i in range(batch):
        f_true = OPEN_STRINGS_HZ[int(idx[i])]
        f_off = f_true * 2 ** (float(cents[i]) / 1200)
        noisy.append(string_frame(f_off, TRAIN["n_harmonics"], float(phase[i])))
        clean.append(string_frame(f_true, TRAIN["n_harmonics"], float(phase[i])))
    return torch.stack(noisy).unsqueeze(1), torch.stack(clean).unsqueeze(1)


class Retuner(nn.Module):
    def __init__(self, channels=16):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, channels, 15, padding=7), nn.Tanh(),
            nn.Conv1d(channels, channels, 15, padding=7), nn.Tanh(),
            nn.Conv1d(channels, 1, 15, padding=7),
        )

    def forward(self, x):
        return x + self.net(x)


def log_spectral_distance(pred, ref, eps=1e-6):
    """Mean log-spectral distance between two batches of frames, as used in the listening-test scripts."""
    window = np.hanning(pred.shape[-1])
    p = np.abs(np.fft.rfft(pred * window, axis=-1)) ** 2
    r = np.abs(np.fft.rfft(ref * window, axis=-1)) ** 2
    diff = 10 * np.log10(p + eps) - 10 * np.log10(r + eps)
    return float(np.sqrt((diff ** 2).mean(axis=-1)).mean())


def fit(retuner, opt):
    for step in range(TRAIN["steps"]):
        noisy, clean = detuned_pairs(TRAIN["batch"])
        pred = retuner(noisy)
        lsd = log_spectral_distance(pred.detach().numpy(), clean.numpy())
        spectral_loss = torch.tensor(lsd)
        opt.zero_grad()
        spectral_loss.backward()
        opt.step()
        print(f"step {step}: LSD {spectral_loss.item():.2f} dB")


def main():
    retuner = Retuner()
    opt = torch.optim.Adam(retuner.parameters(), lr=TRAIN["lr"])
    fit(retuner, opt)


if __name__ == "__main__":
    main()
