"""Lightning done right: automatic optimization with gradient accumulation, then a GAN in manual optimization."""

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
        gate = torch.sigmoid(self.encoder(x)) * 2.0
        return nn.functional.binary_cross_entropy_with_logits(self.head(gate), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9)


class GAN(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.generator = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
        self.discriminator = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
        self.bce = nn.BCEWithLogitsLoss()

    def training_step(self, batch, batch_idx):
        (real,) = batch
        opt_g, opt_d = self.optimizers()
        fake = self.generator(torch.randn(real.shape[0], 4))
        ones, zeros = torch.ones(real.shape[0], 1), torch.zeros(real.shape[0], 1)
        d_loss = self.bce(self.discriminator(real), ones) + self.bce(self.discriminator(fake.detach()), zeros)
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()
        g_loss = self.bce(self.discriminator(fake), ones)
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.generator.parameters(), lr=1e-3)
        opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=1e-3)
        return opt_g, opt_d


def trainer(**kwargs) -> L.Trainer:
    return L.Trainer(
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        **kwargs,
    )


torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(32, 8), torch.randint(0, 2, (32, 1)).float())
classifier = Classifier()
trainer(max_steps=3, accumulate_grad_batches=2).fit(classifier, torch.utils.data.DataLoader(data, batch_size=4))
print("classifier:", [round(p.detach().sum().item(), 6) for p in classifier.parameters()])

gan = GAN()
real = torch.utils.data.TensorDataset(torch.randn(64, 2))
trainer(max_steps=6).fit(gan, torch.utils.data.DataLoader(real, batch_size=16))
print("gan:", [round(p.detach().sum().item(), 6) for p in gan.parameters()])
