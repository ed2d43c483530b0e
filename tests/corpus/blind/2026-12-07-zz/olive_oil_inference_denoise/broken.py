"""Olive-oil authenticity: detecting adulteration with seed oils from NIR spectra.

Source: https://github.com/pytorch/pytorch/pull/54403 ("Relax some limitations of InferenceMode").
The PR sets out how tensors made under ``torch.inference_mode()`` behave: every tensor created
there is an inference tensor, it has no version counter, there is no way to turn it back into a
normal tensor, and "Inference tensor cannot be saved for backward". A tensor produced in
inference mode and later fed to an op that autograd records raises "Inference tensors cannot be
saved for backward"; inference mode is for code whose outputs never reach training, and
``torch.no_grad()`` is the context for a frozen preprocessing step whose outputs are trained on.

Reduction: a frozen, pretrained spectral denoiser cleans the NIR spectra of extra-virgin samples
and blends once, before training, inside ``torch.inference_mode()`` (the project's "fast
preprocessing" helper). The classifier starts with a learnable per-band gain multiplied into the
cleaned spectra; that multiplication must save the spectra for the gain's gradient.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

CFG = {
    "n_samples": 160,
    "n_bands": 128,
    "adulterants": ["sunflower", "hazelnut", "soybean"],
    "epochs": 3,
    "batch": 32,
    "lr": 1e-3,
}


def synth_spectra(n, bands, n_classes):
    wl = torch.linspace(0, 1, bands)
    label = torch.randint(0, n_classes + 1, (n,))
    base = torch.exp(-((wl - 0.35) / 0.05) ** 2) + 0.6 * torch.exp(-((wl - 0.7) / 0.08) ** 2)
    shift = torch.stack([torch.exp(-((wl - c) / 0.03) ** 2) for c in torch.linspace(0.45, 0.85, n_classes)])
    spectra = base + 0.05 * torch.randn(n, bands)
    adulterated = label > 0
    spectra[adulterated] += 0.3 * shift[label[adulterated] - 1]
    return spectra, label


class SpectralDenoiser(nn.Module):
    """Pretrained 1-D conv autoencoder (frozen here)."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Conv1d(1, 8, 9, padding=4)
        self.dec = nn.Conv1d(8, 1, 9, padding=4)

    def forward(self, x):
        return x + self.dec(torch.tanh(self.enc(x[:, None])))[:, 0]


class AdulterationNet(nn.Module):
    def __init__(self, bands, n_out):
        super().__init__()
        self.band_gain = nn.Parameter(torch.ones(bands))
        self.conv = nn.Conv1d(1, 16, 7, padding=3)
        self.head = nn.Linear(16 * 8, n_out)

    def forward(self, spectra):
        x = spectra * self.band_gain
        x = F.adaptive_avg_pool1d(F.relu(self.conv(x[:, None])), 8)
        return self.head(x.flatten(1))


def preprocess(denoiser, spectra):
    denoiser.eval()
    with torch.inference_mode():
        clean = denoiser(spectra)
        clean = (clean - clean.mean(1, keepdim=True)) / clean.std(1, keepdim=True)
    return clean


def fit(classifier, clean, labels, cfg):
    opt = torch.optim.AdamW(classifier.parameters(), lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        for s in range(0, len(labels), cfg["batch"]):
            batch, target = clean[s:s + cfg["batch"]], labels[s:s + cfg["batch"]]
            class_loss = F.cross_entropy(classifier(batch), target)
            opt.zero_grad()
            class_loss.backward()
            opt.step()
        print(f"epoch {epoch} loss {class_loss.item():.4f}")


if __name__ == "__main__":
    n_classes = len(CFG["adulterants"])
    spectra, labels = synth_spectra(CFG["n_samples"], CFG["n_bands"], n_classes)
    order = torch.randperm(len(labels))
    spectra, labels = spectra[order], labels[order]
    denoiser = SpectralDenoiser()
    for p in denoiser.parameters():
        p.requires_grad_(False)
    clean = preprocess(denoiser, spectra)
    classifier = AdulterationNet(CFG["n_bands"], n_classes + 1)
    fit(classifier, clean, labels, CFG)
