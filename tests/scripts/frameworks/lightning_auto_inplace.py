"""Lightning, automatic optimization: training_step scales a sigmoid's output in place."""

import lightning as L
import torch
from torch import nn


class Classifier(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.Tanh())
        self.head = nn.Linear(16, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        gate = torch.sigmoid(self.encoder(x))
        gate *= 2.0
        logits = self.head(gate)
        return nn.functional.binary_cross_entropy_with_logits(logits, y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(32, 8), torch.randint(0, 2, (32, 1)).float())
loader = torch.utils.data.DataLoader(data, batch_size=8)
trainer = L.Trainer(
    max_steps=3,
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(Classifier(), loader)
print("trained")
