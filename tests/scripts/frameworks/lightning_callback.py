"""gradlab's Lightning callback: on a correct model, on one whose training_step cuts its encoder off, on a failing one.

Prints one line per case: what the callback reported at step 1 and how many steps it tracked.
"""

import warnings

import lightning as L
import torch
from torch import nn

from gradlab.integrations.lightning import TrackCallback


class Classifier(L.LightningModule):
    def __init__(self, cut: bool = False, inplace: bool = False) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.Tanh())
        self.head = nn.Linear(16, 1)
        self.cut, self.inplace = cut, inplace

    def training_step(self, batch, batch_idx):
        x, y = batch
        features = self.encoder(x)
        if self.cut:
            features = features.detach()
        gate = torch.sigmoid(features)
        if self.inplace:
            gate *= 2.0
        return nn.functional.binary_cross_entropy_with_logits(self.head(gate), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def fit(model: L.LightningModule, callback: TrackCallback) -> None:
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(32, 8), torch.randint(0, 2, (32, 1)).float())
    trainer = L.Trainer(
        max_steps=4,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[callback],
    )
    trainer.fit(model, torch.utils.data.DataLoader(data, batch_size=8))


for case in ("correct", "cut"):
    callback = TrackCallback(steps=2)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fit(Classifier(cut=case == "cut"), callback)
    ours = [str(w.message).splitlines()[0] for w in seen if "gradlab" in type(w.message).__module__]
    kinds = [m.kind for r in callback.reports for m in r.mismatches]
    print(f"{case}: reports {len(callback.reports)} ok {all(r.ok for r in callback.reports)} kinds {kinds}")
    print(f"{case}: warnings {ours}")
    print(f"{case}: tracker active after fit {callback.tracker.active}")

callback = TrackCallback(steps=None)
try:
    fit(Classifier(inplace=True), callback)
except RuntimeError as error:
    note = [n for n in getattr(error, "__notes__", []) if "gradlab: error[" in n]
    print("inplace: note", note[0].strip().splitlines()[0] if note else None)
    print(f"inplace: tracker active after fit {callback.tracker.active}")
