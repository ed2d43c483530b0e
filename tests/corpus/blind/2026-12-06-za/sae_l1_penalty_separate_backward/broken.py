"""Sparse autoencoder on a model's activations: MSE reconstruction plus an L1 penalty on the latents.

Report: https://github.com/schelotto/Wasserstein-AutoEncoders/issues/2
In the WAE-MMD script the reconstruction loss and the MMD penalty on the encoder's codes were
backpropagated one after the other; the second call (``mmd_loss.mean().backward(...)``) failed
with "Trying to backward through the graph a second time", because the first backward had
already freed the encoder's graph that both losses share. The script was later written with a
single ``total_loss = recon_loss + mmd_loss; total_loss.backward()``. The training setting is the
writer's: a sparse autoencoder for interpretability (Anthropic-style: pre-encoder bias, ReLU
latents, unit-norm decoder columns renormalised after each step, gradient parallel to the
columns removed), whose reconstruction loss and L1 sparsity penalty are backpropagated separately.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

D_IN, D_SAE, BATCH, L1_COEFF = 16, 64, 32, 3e-3


class SparseAutoencoder(nn.Module):
    def __init__(self, d_in, d_sae):
        super().__init__()
        self.W_enc = nn.Parameter(torch.randn(d_in, d_sae) * 0.1)
        self.b_enc = nn.Parameter(torch.zeros(d_sae))
        self.W_dec = nn.Parameter(self.W_enc.data.t().clone())
        self.b_dec = nn.Parameter(torch.zeros(d_in))
        self.set_decoder_norm_to_unit_norm()

    def encode(self, x):
        return F.relu((x - self.b_dec) @ self.W_enc + self.b_enc)

    def forward(self, x):
        acts = self.encode(x)
        return acts @ self.W_dec + self.b_dec, acts

    @torch.no_grad()
    def set_decoder_norm_to_unit_norm(self):
        self.W_dec.data /= self.W_dec.data.norm(dim=1, keepdim=True)

    @torch.no_grad()
    def remove_gradient_parallel_to_decoder_directions(self):
        parallel = (self.W_dec.grad * self.W_dec.data).sum(1, keepdim=True)
        self.W_dec.grad -= parallel * self.W_dec.data


# synthetic "residual stream" activations: sparse combinations of ground-truth features
true_features = F.normalize(torch.randn(48, D_IN), dim=1)


def activation_batch():
    coeffs = torch.rand(BATCH, 48) * (torch.rand(BATCH, 48) < 0.06)
    return coeffs @ true_features + 0.01 * torch.randn(BATCH, D_IN)


sae = SparseAutoencoder(D_IN, D_SAE)
optimizer = torch.optim.Adam(sae.parameters(), lr=1e-3)

for step in range(4):
    x = activation_batch()
    x_hat, acts = sae(x)
    mse_loss = F.mse_loss(x_hat, x)
    l1_loss = L1_COEFF * acts.abs().sum(-1).mean()

    optimizer.zero_grad()
    mse_loss.backward()
    l1_loss.backward()
    sae.remove_gradient_parallel_to_decoder_directions()
    optimizer.step()
    sae.set_decoder_norm_to_unit_norm()
    dead = (acts.detach().sum(0) == 0).float().mean().item()
    print(f"step {step} mse {mse_loss.item():.4f} l1 {l1_loss.item():.4f} dead {dead:.2f}")
