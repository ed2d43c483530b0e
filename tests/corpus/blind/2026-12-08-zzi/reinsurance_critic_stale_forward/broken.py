"""Adversarial scenario generator for reinsurance pricing: a critic step invalidates the generator's forward.

Reduced from the PyTorch forum thread
https://discuss.pytorch.org/t/runtimeerror-one-of-the-variables-needed-for-gradient-computation-has-been-modified-by-an-inplace-operation-torch-floattensor-1024-1-is-at-version-2-expected-version-1-instead/184543
("RuntimeError: one of the variables needed for gradient computation has been modified by
an inplace operation: [torch.FloatTensor [1024, 1]] is at version 2; expected version 1
instead").  The [1024, 1] tensor is the (transposed) weight of a final ``Linear(1024, 1)``
scoring layer; the answer on the thread: "You might be running into this error if stale
forward activations are used during a backward call" -- a forward pass was made, an
optimizer then updated the weights in place, and a loss computed from that old forward was
backwarded afterwards.  The intent is to backward each loss against the weights that produced
it: detach the fakes for the critic update and run the critic again after its step for the
generator loss.

Reduction: a generator turns noise into yearly catastrophe-loss vectors (one severity per
peril region) and a critic with a 1024-unit hidden layer and a ``Linear(1024, 1)`` output
scores real versus generated scenarios, trained in the usual alternating way.  The critic's
output on the fakes is computed once, used for the critic loss (backward with
``retain_graph=True``), the critic optimizer steps, and the generator loss reuses that same
stale output: the generator's backward needs the critic's old output weight.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)

CONFIG = dict(noise_dim=8, n_regions=12, critic_hidden=1024, gen_hidden=64,
              n_years=128, batch=32, epochs=2, lr_g=2e-4, lr_d=2e-4)


class ScenarioGenerator(nn.Module):
    def __init__(self, noise_dim, n_regions, hidden):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(noise_dim, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, n_regions),
        )

    def forward(self, z):
        # log-severities are positive-skewed: softplus keeps them positive
        return F.softplus(self.net(z))


class ScenarioCritic(nn.Module):
    def __init__(self, n_regions, hidden):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(n_regions, hidden), nn.LeakyReLU(0.2))
        self.score = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.score(self.features(x))


def historical_losses(n_years, n_regions):
    base = torch.rand(n_regions) * 2.0 + 0.5
    shocks = torch.distributions.Gamma(2.0, 1.5).sample((n_years, n_regions))
    return base * shocks


class AdversarialTrainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.generator = ScenarioGenerator(cfg["noise_dim"], cfg["n_regions"], cfg["gen_hidden"])
        self.critic = ScenarioCritic(cfg["n_regions"], cfg["critic_hidden"])
        self.opt_g = torch.optim.Adam(self.generator.parameters(), lr=cfg["lr_g"], betas=(0.5, 0.9))
        self.opt_d = torch.optim.Adam(self.critic.parameters(), lr=cfg["lr_d"], betas=(0.5, 0.9))
        self.bce = nn.BCEWithLogitsLoss()

    def step(self, real):
        z = torch.randn(real.shape[0], self.cfg["noise_dim"])
        fake = self.generator(z)
        d_real = self.critic(real)
        d_fake = self.critic(fake)

        # critic update
        self.opt_d.zero_grad()
        d_loss = self.bce(d_real, torch.ones_like(d_real)) + self.bce(d_fake, torch.zeros_like(d_fake))
        d_loss.backward(retain_graph=True)
        self.opt_d.step()

        # generator update, reusing the critic's scores on the fakes
        self.opt_g.zero_grad()
        g_loss = self.bce(d_fake, torch.ones_like(d_fake))
        g_loss.backward()
        self.opt_g.step()
        return d_loss.item(), g_loss.item()

    def fit(self, data):
        for epoch in range(self.cfg["epochs"]):
            perm = torch.randperm(data.shape[0])
            for start in range(0, data.shape[0], self.cfg["batch"]):
                d, g = self.step(data[perm[start:start + self.cfg["batch"]]])
            print(f"epoch {epoch}: critic {d:.3f} generator {g:.3f}")


def main():
    cfg = CONFIG
    data = historical_losses(cfg["n_years"], cfg["n_regions"])
    AdversarialTrainer(cfg).fit(data)


if __name__ == "__main__":
    main()
