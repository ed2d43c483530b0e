"""GAN: a WGAN with weight clipping learns a ring of 2-D points; a Trainer class holds both networks and optimizers."""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)

LATENT = 4


def sample_ring(n):
    angle = 2 * math.pi * torch.rand(n)
    radius = 1.0 + 0.05 * torch.randn(n)
    return torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], dim=1)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(LATENT, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, z):
        return self.net(z)


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(2, 32)
        self.fc2 = nn.Linear(32, 32)
        self.out = nn.Linear(32, 1, bias=False)  # a bias cancels in E[critic(fake)] - E[critic(real)]

    def forward(self, x):
        h = torch.tanh(self.fc1(x))
        h = torch.tanh(self.fc2(h))
        return self.out(h)


class Trainer:
    def __init__(self, n_critic=3, clip=0.1):
        self.gen = Generator()
        self.critic = Critic()
        self.opt_g = torch.optim.RMSprop(self.gen.parameters(), lr=5e-4)
        self.opt_c = torch.optim.RMSprop(self.critic.parameters(), lr=5e-4)
        self.n_critic = n_critic
        self.clip = clip

    def critic_step(self, real):
        z = torch.randn(real.shape[0], LATENT)
        fake = self.gen(z).detach()
        loss_c = self.critic(fake).mean() - self.critic(real).mean()
        self.opt_c.zero_grad()
        loss_c.backward()
        self.opt_c.step()
        with torch.no_grad():
            for p in self.critic.parameters():
                p.clamp_(-self.clip, self.clip)
        return loss_c.item()

    def generator_step(self, batch_size):
        z = torch.randn(batch_size, LATENT)
        fake = self.gen(z)
        loss_g = -self.critic(fake).mean()
        self.opt_g.zero_grad()
        loss_g.backward()
        self.opt_g.step()
        return loss_g.item()

    def fit(self, data, epochs, batch_size=32):
        for epoch in range(epochs):
            for i in range(0, len(data), batch_size * self.n_critic):
                for j in range(self.n_critic):
                    real = data[i + j * batch_size : i + (j + 1) * batch_size]
                    loss_c = self.critic_step(real)
                loss_g = self.generator_step(batch_size)
            print(f"epoch {epoch}: critic {loss_c:.4f} generator {loss_g:.4f}")


if __name__ == "__main__":
    data = sample_ring(192)
    Trainer().fit(data, epochs=2)
