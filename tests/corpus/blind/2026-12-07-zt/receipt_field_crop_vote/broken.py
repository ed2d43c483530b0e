"""Receipt field extraction: per-crop field classifier whose crop votes are averaged per receipt.

Source: https://github.com/nyukat/breast_cancer_classifier/issues/56

In the report the author writes a training loop around the repository's
``run_model``: the per-view probabilities are turned into NumPy, grouped and
averaged per label with pandas, and the averaged ``predictions`` are wrapped again
with ``torch.tensor(...)`` to compute a loss and call ``backward``. The maintainer
answers that the gradient cannot flow back into the model that way. This script
moves the pattern to receipts: each scanned receipt is cut into several crops,
a small CNN scores each crop for which field it shows (total, date, vendor,
tax), and the crop scores are averaged per receipt with a NumPy group-by before
the receipt-level loss. The rebuilt tensor has no history, so the backward fails.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

FIELDS = ["total", "date", "vendor", "tax"]
SETTINGS = {
    "receipts": 12,
    "crops_per_receipt": 4,
    "crop_size": 16,
    "lr": 1e-3,
    "steps": 3,
}


def scan_receipts(cfg):
    n = cfg["receipts"] * cfg["crops_per_receipt"]
    crops = torch.randn(n, 1, cfg["crop_size"], cfg["crop_size"])
    receipt_id = torch.arange(cfg["receipts"]).repeat_interleave(cfg["crops_per_receipt"])
    labels = torch.randint(0, len(FIELDS), (cfg["receipts"],))
    return crops, receipt_id, labels


class CropFieldNet(nn.Module):
    def __init__(self, n_fields):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(16, n_fields)

    def forward(self, crops):
        return self.head(self.conv(crops).flatten(1))


def average_by_receipt(crop_probs, receipt_id):
    probs = crop_probs.detach().cpu().numpy()
    ids = receipt_id.numpy()
    keys = np.unique(ids)
    table = np.stack([probs[ids == k].mean(axis=0) for k in keys])
    return table


def train_step(model, opt, crops, receipt_id, labels):
    opt.zero_grad()
    crop_probs = F.softmax(model(crops), dim=1)
    receipt_probs = torch.tensor(average_by_receipt(crop_probs, receipt_id), dtype=torch.float32)
    receipt_loss = F.nll_loss(torch.log(receipt_probs + 1e-8), labels)
    receipt_loss.backward()
    opt.step()
    return receipt_loss.item()


def main(cfg):
    torch.manual_seed(3)
    crops, receipt_id, labels = scan_receipts(cfg)
    field_net = CropFieldNet(len(FIELDS))
    field_opt = torch.optim.Adam(field_net.parameters(), lr=cfg["lr"])
    for step in range(cfg["steps"]):
        loss = train_step(field_net, field_opt, crops, receipt_id, labels)
        print(f"step {step}: receipt nll {loss:.4f}")


if __name__ == "__main__":
    main(SETTINGS)
