"""A conditional GAN trainer in the pix2pix style: forward() stores the generator's sample on the model, the critic
is updated several rounds on it (a gradient penalty that reaches the sample undetached), then the generator's
loss reads the same stored sample."""

import torch
import torch.nn as nn

torch.manual_seed(0)


def penalty(critic, real, fake):
    mix = torch.rand(real.size(0), 1)
    points = mix * real + (1 - mix) * fake
    points.requires_grad_(True)
    out = critic(points)
    (grad,) = torch.autograd.grad(out.sum(), points, create_graph=True)
    return ((grad.norm(dim=1) - 1) ** 2).mean()


class Trainer:
    def __init__(self):
        self.gen = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 4))
        self.critic = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        self.opt_gen = torch.optim.Adam(self.gen.parameters(), lr=1e-3)
        self.opt_critic = torch.optim.Adam(self.critic.parameters(), lr=1e-3)

    def forward(self, noise):
        self.sample = self.gen(noise)

    def critic_loss(self, real):
        fake = self.sample
        score = self.critic(fake.detach()).mean() - self.critic(real).mean()
        d_loss = score + 10 * penalty(self.critic, real, fake)
        d_loss.backward()
        return d_loss

    def generator_loss(self):
        g_loss = -self.critic(self.sample).mean()
        g_loss.backward()
        return g_loss

    def train_step(self, noise, real):
        self.forward(noise)
        for _ in range(3):
            self.opt_critic.zero_grad()
            self.critic_loss(real)
            self.opt_critic.step()
        self.opt_gen.zero_grad()
        self.generator_loss()
        self.opt_gen.step()


trainer = Trainer()
for it in range(3):
    trainer.train_step(torch.randn(16, 3), torch.randn(16, 4))
    print(it)
