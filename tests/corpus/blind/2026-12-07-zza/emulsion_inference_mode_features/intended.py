"""Cosmetic emulsion shelf-life regression with features prepared under inference_mode.

Source: https://github.com/pytorch/pytorch/issues/57369 -- when ``inference_mode`` guards
only part of a pipeline (the pre-processing but not what follows, or the other way
round), tensors created inside it reach code that autograd tracks and fail there:
"Inference tensors cannot be saved for backward" (or the in-place variant of it).

Reduction: a formulation lab's shelf-life model; the droplet-size histogram and
rheology features are standardised by a pre-processing helper decorated with
``@torch.inference_mode()`` (written for the serving path and reused in training). The
features it returns are inference tensors; the first Linear of the encoder saves its
input for the weight gradient, and the forward fails. The emulsion setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

N_SAMPLES = 96
HIST_BINS = 16        # droplet-size histogram bins
RHEO_FEATS = 4        # viscosity, yield stress, zeta potential, pH
BATCH = 32


def make_formulations():
    hist = torch.rand(N_SAMPLES, HIST_BINS)
    hist = hist / hist.sum(1, keepdim=True)
    rheo = torch.randn(N_SAMPLES, RHEO_FEATS) * torch.tensor([50.0, 2.0, 10.0, 0.5]) + torch.tensor([800.0, 5.0, -30.0, 6.0])
    months = 6.0 + 18.0 * torch.sigmoid(rheo[:, 2:3] / 10.0 + hist[:, :4].sum(1, keepdim=True) * 3.0 - 1.0)
    return hist, rheo, months


class FeatureScaler:
    def __init__(self, rheo):
        self.mean = rheo.mean(0)
        self.std = rheo.std(0)

    @torch.no_grad()
    def prepare(self, hist, rheo):
        z = (rheo - self.mean) / self.std
        return torch.cat([hist * HIST_BINS, z], dim=1)


def train_epoch(encoder, head, optim_shelf, scaler, data):
    hist, rheo, months = data
    total = 0.0
    for start in range(0, N_SAMPLES, BATCH):
        sl = slice(start, start + BATCH)
        feats = scaler.prepare(hist[sl], rheo[sl])
        pred = head(encoder(feats))
        shelf_loss = F.huber_loss(pred, months[sl], delta=2.0)
        optim_shelf.zero_grad()
        shelf_loss.backward()
        optim_shelf.step()
        total += shelf_loss.item()
    return total


def main():
    data = make_formulations()
    scaler = FeatureScaler(data[1])
    encoder = nn.Sequential(nn.Linear(HIST_BINS + RHEO_FEATS, 32), nn.SiLU(), nn.Linear(32, 16), nn.SiLU())
    head = nn.Linear(16, 1)
    optim_shelf = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), lr=5e-3)
    for epoch in range(4):
        print(f"epoch {epoch}: {train_epoch(encoder, head, optim_shelf, scaler, data):.3f}")


if __name__ == "__main__":
    main()
