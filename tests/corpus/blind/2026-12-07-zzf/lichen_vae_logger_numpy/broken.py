"""Lichen and moss cover monitoring: a convolutional VAE on quadrat photographs, with an image logger.

Source: https://github.com/inferno-pytorch/inferno/issues/195 ("tensorboard logger asking for a
detach()"). The author trained a VAE with inferno's Trainer and a TensorboardLogger set to log images
every iteration; the logger's ``extract_images_from_batch`` ran ``batch.float().numpy()`` on the
prediction and raised "Can't call numpy() on Variable that requires grad". The author patched that
line to detach the batch first.

Reduction: the training setting is the writer's (lichen growth monitoring from fixed quadrat photos).
A small Trainer runs the VAE and calls its callbacks after each iteration; the image logger turns the
reconstruction batch into a NumPy grid for the log, straight from the tensor the model returned.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

OPTIONS = {"image": 24, "latent": 8, "batch": 8, "iterations": 4, "lr": 1e-3, "beta": 0.5, "log_every": 1}


class QuadratVAE(nn.Module):
    def __init__(self, latent):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(3, 16, 4, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 4, stride=2, padding=1), nn.ReLU(), nn.Flatten(),
        )
        self.to_stats = nn.Linear(32 * 6 * 6, 2 * latent)
        self.from_latent = nn.Linear(latent, 32 * 6 * 6)
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1), nn.ReLU(),
            nn.ConvTranspose2d(16, 3, 4, stride=2, padding=1), nn.Sigmoid(),
        )

    def forward(self, x):
        mu, log_var = self.to_stats(self.encoder(x)).chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * (0.5 * log_var).exp()
        recon = self.decoder(self.from_latent(z).view(-1, 32, 6, 6))
        return recon, mu, log_var


class ImageLogger:
    """Keeps a grid of the latest reconstructions, as a tensorboard image summary would."""

    def __init__(self, every):
        self.every, self.images = every, []

    @staticmethod
    def extract_images_from_batch(batch):
        batch = batch.float().numpy()
        return np.concatenate(list(np.transpose(batch, (0, 2, 3, 1))), axis=1)

    def end_of_iteration(self, trainer, iteration, inputs, prediction):
        if iteration % self.every == 0:
            self.images.append(self.extract_images_from_batch(prediction))


class ScalarLogger:
    def __init__(self):
        self.values = []

    def end_of_iteration(self, trainer, iteration, inputs, prediction):
        self.values.append(trainer.last_loss)


class Trainer:
    def __init__(self, vae, beta, lr):
        self.vae, self.beta = vae, beta
        self.optimizer = torch.optim.Adam(vae.parameters(), lr=lr)
        self.callbacks, self.last_loss = [], None

    def register(self, callback):
        self.callbacks.append(callback)

    def criterion(self, recon, x, mu, log_var):
        rec = F.binary_cross_entropy(recon, x, reduction="sum") / x.shape[0]
        kl = -0.5 * torch.mean(torch.sum(1 + log_var - mu**2 - log_var.exp(), dim=1))
        return rec + self.beta * kl

    def fit(self, batches):
        for iteration, x in enumerate(batches):
            self.optimizer.zero_grad()
            recon, mu, log_var = self.vae(x)
            vae_loss = self.criterion(recon, x, mu, log_var)
            vae_loss.backward()
            self.optimizer.step()
            self.last_loss = vae_loss.item()
            for callback in self.callbacks:
                callback.end_of_iteration(self, iteration, x, recon)


def quadrat_photos(n, size):
    """Grey rock with lichen rosettes (yellow-green discs) whose cover varies per photo."""
    yy, xx = torch.meshgrid(torch.linspace(0, 1, size), torch.linspace(0, 1, size), indexing="ij")
    photos = 0.45 + 0.05 * torch.randn(n, 3, size, size)
    for i in range(n):
        for _ in range(int(torch.randint(1, 5, ()))):
            cy, cx, r = torch.rand(3) * torch.tensor([1.0, 1.0, 0.25])
            disc = ((yy - cy) ** 2 + (xx - cx) ** 2) < r**2
            photos[i][:, disc] = torch.tensor([0.7, 0.75, 0.2])[:, None]
    return photos.clamp(0, 1)


def main():
    torch.manual_seed(17)
    vae = QuadratVAE(OPTIONS["latent"])
    trainer = Trainer(vae, OPTIONS["beta"], OPTIONS["lr"])
    trainer.register(ScalarLogger())
    trainer.register(ImageLogger(OPTIONS["log_every"]))
    batches = [quadrat_photos(OPTIONS["batch"], OPTIONS["image"]) for _ in range(OPTIONS["iterations"])]
    trainer.fit(batches)
    print("final loss", trainer.last_loss)


if __name__ == "__main__":
    main()
