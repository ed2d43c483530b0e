"""Real-time bidding: bid shading fine-tuned per campaign with a fixed-scale clip helper.

Report: https://github.com/facebookresearch/ParlAI/pull/3014 ("Fix fp16 gradient clip when
len(params) == 1"). ParlAI's clipping helper had a special case for a single parameter that
scaled the parameter itself, ``p.mul_(clip_coef)``, instead of its gradient; with everything
frozen but one embedding table the run crashed with "a leaf Variable that requires grad has been
used in an in-place operation". The PR applies the coefficient to the gradient, as torch's and
fairseq's clip_grad_norm do.

The training setting is the writer's: a pretrained bid-shading network is frozen and only the
per-campaign embedding table is fine-tuned (one trainable parameter), maximising the expected
surplus (value - bid) * P(win | bid) under a budget-pacing penalty whose Lagrange multiplier is
updated by hand. The clip helper copies ParlAI's single-parameter special case.
"""

import torch
import torch.nn as nn

torch.manual_seed(0)

N_CAMPAIGNS, CTX_DIM, EMB_DIM = 12, 10, 6
BATCH = 64


class BidShader(nn.Module):
    """Predicts a shading factor in (0, 1) from the request context and the campaign embedding."""

    def __init__(self):
        super().__init__()
        self.campaign_emb = nn.Embedding(N_CAMPAIGNS, EMB_DIM)
        self.mlp = nn.Sequential(nn.Linear(CTX_DIM + EMB_DIM, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, ctx, campaign):
        h = torch.cat([ctx, self.campaign_emb(campaign)], dim=1)
        return torch.sigmoid(self.mlp(h)).squeeze(1)


def clip_grad_norm(params, max_norm):
    """Clip gradients to max_norm; with a single parameter, skip the generic path (as in ParlAI)."""
    params = [p for p in params if p.grad is not None]
    if len(params) == 1:
        p = params[0]
        grad_norm = p.grad.norm()
        if max_norm > 0 and grad_norm > max_norm:
            clip_coef = max_norm / (grad_norm + 1e-6)
            p.grad.mul_(clip_coef)
        return grad_norm
    return torch.nn.utils.clip_grad_norm_(params, max_norm)


def auction_batch(n):
    ctx = torch.randn(n, CTX_DIM)
    campaign = torch.randint(0, N_CAMPAIGNS, (n,))
    value = 1.0 + torch.rand(n)  # advertiser's value of the impression
    market = 0.6 + 0.5 * torch.rand(n) + 0.1 * ctx[:, 0]  # highest competing bid
    return ctx, campaign, value, market


shader = BidShader()
for p in shader.mlp.parameters():
    p.requires_grad_(False)  # pretrained shading network stays fixed
optimizer = torch.optim.SGD([shader.campaign_emb.weight], lr=0.05)

budget_per_batch = 20.0
pacing_lambda = 0.0

for step in range(4):
    ctx, campaign, value, market = auction_batch(BATCH)
    shade = shader(ctx, campaign)
    bid = value * shade
    win_prob = torch.sigmoid((bid - market) / 0.05)
    surplus = ((value - bid) * win_prob).sum()
    spend = (market * win_prob).sum()
    loss = -surplus / BATCH + pacing_lambda * (spend - budget_per_batch) / BATCH

    optimizer.zero_grad()
    loss.backward()
    clip_grad_norm(shader.parameters(), max_norm=0.01)
    optimizer.step()
    pacing_lambda = max(0.0, pacing_lambda + 0.01 * (spend.item() - budget_per_batch))
    print(f"step {step}: surplus {surplus.item():.3f} spend {spend.item():.2f} lambda {pacing_lambda:.3f}")
