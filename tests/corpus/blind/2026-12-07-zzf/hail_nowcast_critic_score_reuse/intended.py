"""Adversarial hail nowcasting: a generator extrapolates radar reflectivity, a Wasserstein critic judges it.

Source: https://github.com/eriklindernoren/PyTorch-GAN/issues/6 ("wgan retrain_graph"). Running the
repository's wgan.py stopped at ``gen_validity.backward(valid)`` with "Trying to backward through the
graph a second time"; the maintainer answered that a typo had snuck in and fixed it. The thread does
not show the typo; the reduction gives the generator step a critic output from the critic's update.

Reduction: the training setting is a nowcasting GAN (the writer's): four past radar frames in, two
future frames out, a critic with weight clipping scoring (context, future) pairs. In each step the
critic phase scores the generated frames and backwards its loss; the generator phase then builds its
loss from the score the critic phase already computed, whose graph that backward freed.
"""
import torch
import torch.nn as nn

CONFIG = {
    "frames_in": 4,
    "frames_out": 2,
    "grid": 16,
    "batch": 8,
    "noise_channels": 2,
    "steps": 4,
    "lr": 5e-5,
    "clip": 0.05,
}


class RadarGenerator(nn.Module):
    def __init__(self, frames_in, frames_out, noise_channels, width=24):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(frames_in + noise_channels, width, 3, padding=1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(width, width, 3, padding=1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(width, frames_out, 3, padding=1),
        )

    def forward(self, context, noise):
        residual = self.body(torch.cat([context, noise], dim=1))
        persistence = context[:, -1:].expand(-1, residual.shape[1], -1, -1)
        return torch.relu(persistence + residual)


class RadarCritic(nn.Module):
    def __init__(self, frames_in, frames_out, width=24):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(frames_in + frames_out, width, 3, stride=2, padding=1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(width, width * 2, 3, stride=2, padding=1),
            nn.LeakyReLU(0.2),
        )
        self.score = nn.Linear(width * 2, 1)

    def forward(self, context, future):
        h = self.features(torch.cat([context, future], dim=1))
        return self.score(h.mean(dim=(2, 3)))


def synthetic_storms(batch, cfg):
    """Gaussian hail cells drifting across the grid; reflectivity in [0, 1]."""
    n = cfg["frames_in"] + cfg["frames_out"]
    g = cfg["grid"]
    yy, xx = torch.meshgrid(torch.arange(g).float(), torch.arange(g).float(), indexing="ij")
    start = torch.rand(batch, 2) * g * 0.5
    velocity = torch.rand(batch, 2) * 1.5 + 0.5
    width = torch.rand(batch, 1, 1) * 2.0 + 1.5
    frames = []
    for t in range(n):
        centre = start + velocity * t
        d2 = (yy - centre[:, 0, None, None]) ** 2 + (xx - centre[:, 1, None, None]) ** 2
        frames.append(torch.exp(-d2 / (2 * width**2)))
    seq = torch.stack(frames, dim=1)
    return seq[:, : cfg["frames_in"]], seq[:, cfg["frames_in"] :]


def clip_critic(critic, clip):
    for p in critic.parameters():
        p.data.clamp_(-clip, clip)


def train(cfg):
    torch.manual_seed(11)
    generator = RadarGenerator(cfg["frames_in"], cfg["frames_out"], cfg["noise_channels"])
    critic = RadarCritic(cfg["frames_in"], cfg["frames_out"])
    opt_gen = torch.optim.RMSprop(generator.parameters(), lr=cfg["lr"])
    opt_critic = torch.optim.RMSprop(critic.parameters(), lr=cfg["lr"])
    history = []
    for step in range(cfg["steps"]):
        context, future = synthetic_storms(cfg["batch"], cfg)
        noise = torch.randn(cfg["batch"], cfg["noise_channels"], cfg["grid"], cfg["grid"])
        forecast = generator(context, noise)

        opt_critic.zero_grad()
        real_score = critic(context, future)
        fake_score = critic(context, forecast.detach())
        critic_loss = fake_score.mean() - real_score.mean()
        critic_loss.backward()
        opt_critic.step()
        clip_critic(critic, cfg["clip"])

        opt_gen.zero_grad()
        gen_score = critic(context, forecast)
        gen_loss = -gen_score.mean()
        gen_loss.backward()
        opt_gen.step()

        history.append((critic_loss.item(), gen_loss.item()))
        print(f"step {step}: critic {critic_loss.item():.4f} generator {gen_loss.item():.4f}")
    return history


if __name__ == "__main__":
    train(CONFIG)
