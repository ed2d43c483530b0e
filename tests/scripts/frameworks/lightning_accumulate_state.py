"""Lightning with gradient accumulation: a GRU's hidden state is kept across batches, graph and all."""

import lightning as L
import torch
from torch import nn


class Forecaster(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(4, 8, batch_first=True)
        self.head = nn.Linear(8, 1)
        self.hidden = None

    def training_step(self, batch, batch_idx):
        x, y = batch
        out, self.hidden = self.rnn(x, self.hidden)
        return nn.functional.mse_loss(self.head(out[:, -1]), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(32, 5, 4), torch.randn(32, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8, drop_last=True)
trainer = L.Trainer(
    max_steps=2,
    accumulate_grad_batches=2,
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
model = Forecaster()
trainer.fit(model, loader)
print("trained")
