"""Synthetic pulsar pulse-profile GAN, corrected: the generator steps first, then the critic.

Reduced from pytorch/pytorch issue #39141,
"RuntimeError: one of the variables needed for gradient computation has been modified
by an inplace operation?" (https://github.com/pytorch/pytorch/issues/39141).

The author, on PyTorch 1.5, trained a tiny GAN (the Morvan tutorial's 406_GAN) to fit a
family of sine-like curves: a generator G maps random "ideas" to 15-point curves, a
discriminator D scores curves. Each step computed D on real and generated curves, built
D_loss and G_loss from the same forward pass, then ran
``D_loss.backward(retain_graph=True); opt_D.step(); G_loss.backward(); opt_G.step()``.
From 1.5 on this raises "one of the variables needed for gradient computation has been
modified by an inplace operation: [torch.FloatTensor [128, 1]], which is output 0 of
TBackward, is at version 2; expected version 1": ``opt_D.step()`` rewrote D's weights
in place, and G_loss still had to backpropagate through D using the old weights. The
answer (albanD, adopted by the tutorial in MorvanZhou/PyTorch-Tutorial#91) is to reorder:
update G first from its own forward pass through D, then compute D_loss on a detached
fake batch and update D.

Here the curves are pulsar pulse profiles (a Gaussian main pulse and an interpulse over
rotational phase bins, with random phase jitter); G turns noise into a profile, D
scores profiles. The loop keeps the report's structure: one forward pass per step, both
losses from it, D's backward with retain_graph, D's step, then G's backward.
"""
import torch
import torch.nn as nn

torch.manual_seed(39141)

HPARAMS = {
    "batch_size": 32,
    "noise_dim": 6,
    "phase_bins": 24,
    "hidden": 48,
    "lr_g": 1e-3,
    "lr_d": 1e-3,
    "epochs": 3,
    "batches_per_epoch": 4,
}


def observed_profiles(n, bins):
    """Folded pulse profiles: main pulse near phase 0.3, weaker interpulse near 0.8."""
    phase = torch.linspace(0.0, 1.0, bins).unsqueeze(0)
    jitter = 0.02 * torch.randn(n, 1)
    width = 0.04 + 0.01 * torch.rand(n, 1)
    main = torch.exp(-0.5 * ((phase - 0.3 - jitter) / width) ** 2)
    inter = 0.35 * torch.exp(-0.5 * ((phase - 0.8 - jitter) / (1.5 * width)) ** 2)
    noise = 0.02 * torch.randn(n, bins)
    return main + inter + noise


class ProfileGenerator(nn.Module):
    def __init__(self, noise_dim, hidden, bins):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(noise_dim, hidden), nn.ReLU(), nn.Linear(hidden, bins)
        )

    def forward(self, z):
        return self.net(z)


class ProfileCritic(nn.Module):
    def __init__(self, bins, hidden):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(bins, hidden), nn.ReLU(), nn.Linear(hidden, 1), nn.Sigmoid()
        )

    def forward(self, profile):
        return self.net(profile)


def main():
    hp = HPARAMS
    G = ProfileGenerator(hp["noise_dim"], hp["hidden"], hp["phase_bins"])
    D = ProfileCritic(hp["phase_bins"], hp["hidden"])
    opt_D = torch.optim.Adam(D.parameters(), lr=hp["lr_d"])
    opt_G = torch.optim.Adam(G.parameters(), lr=hp["lr_g"])

    for epoch in range(hp["epochs"]):
        for step in range(hp["batches_per_epoch"]):
            real = observed_profiles(hp["batch_size"], hp["phase_bins"])
            ideas = torch.randn(hp["batch_size"], hp["noise_dim"])
            fake = G(ideas)

            # Generator first, through the critic's current weights.
            prob_fake = D(fake)
            G_loss = torch.mean(torch.log(1.0 - prob_fake))
            opt_G.zero_grad()
            G_loss.backward()
            opt_G.step()

            # Then the critic, on a detached fake batch.
            prob_real = D(real)
            prob_fake = D(fake.detach())
            D_loss = -torch.mean(torch.log(prob_real) + torch.log(1.0 - prob_fake))
            opt_D.zero_grad()
            D_loss.backward()
            opt_D.step()

        print(f"epoch {epoch}: D_loss {D_loss.item():.4f}  G_loss {G_loss.item():.4f}")

    peak = G(torch.randn(4, hp["noise_dim"])).argmax(dim=1).float().mean().item()
    print(f"mean generated peak bin {peak:.1f} of {hp['phase_bins']}")


if __name__ == "__main__":
    main()
