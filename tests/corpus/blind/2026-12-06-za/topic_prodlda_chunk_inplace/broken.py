"""ProdLDA neural topic model on synthetic bag-of-words counts.

Source: https://github.com/XuezheMax/wolf/pull/1 -- training with PyTorch 1.7 failed with a
"modified by an inplace operation" error in a coupling layer that split the network's output with
``mu, log_scale = params.chunk(2, dim=self.dim)`` and then computed the scale in place,
``log_scale.mul_(0.5).tanh_()``. The maintainer replied that the in-place ops were there to save
memory and should be written out of place (``log_scale.mul(0.5).tanh()``). The training setting is
the writer's: a ProdLDA encoder whose head is chunked into the mean and log-variance of the
Laplace-approximated Dirichlet posterior, the standard deviation taken in place the same way.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, TOPICS, HID, N_DOCS, BATCH = 60, 5, 32, 64, 16


def laplace_prior(alpha):
    """Mean and variance of the logistic-normal approximation of Dirichlet(alpha)."""
    k = alpha.numel()
    mu = alpha.log() - alpha.log().mean()
    var = (1.0 / alpha) * (1 - 2.0 / k) + (1.0 / alpha).sum() / k**2
    return mu, var


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(VOCAB, HID), nn.Softplus(), nn.Dropout(0.2))
        self.head = nn.Linear(HID, 2 * TOPICS)
        self.bn = nn.BatchNorm1d(2 * TOPICS, affine=False)

    def forward(self, bow):
        params = self.bn(self.head(self.fc(bow)))
        mu, logvar = params.chunk(2, dim=1)
        std = logvar.mul_(0.5).exp_()
        return mu, logvar, std


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.beta = nn.Linear(TOPICS, VOCAB, bias=False)
        self.bn = nn.BatchNorm1d(VOCAB, affine=False)
        self.drop = nn.Dropout(0.2)

    def forward(self, theta):
        return F.log_softmax(self.bn(self.beta(self.drop(theta))), dim=1)


def elbo(bow, log_word_probs, mu, logvar, prior_mu, prior_var):
    rec = -(bow * log_word_probs).sum(1)
    kl = 0.5 * ((logvar.exp() / prior_var) + (mu - prior_mu) ** 2 / prior_var
                - 1 + prior_var.log() - logvar).sum(1)
    return (rec + kl).mean()


docs = torch.poisson(torch.rand(N_DOCS, VOCAB) * 2.0)
prior_mu, prior_var = laplace_prior(torch.full((TOPICS,), 0.02))

encoder, decoder = Encoder(), Decoder()
optimizer = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()), lr=2e-3)

for epoch in range(3):
    for start in range(0, N_DOCS, BATCH):
        bow = docs[start:start + BATCH]
        mu, logvar, std = encoder(bow)
        z = mu + std * torch.randn_like(std)
        theta = F.softmax(z, dim=1)
        loss = elbo(bow, decoder(theta), mu, logvar, prior_mu, prior_var)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.3f}")
