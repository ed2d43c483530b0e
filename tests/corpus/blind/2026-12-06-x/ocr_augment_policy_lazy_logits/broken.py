"""Scene-text recognition: rectification network + attention decoder, with a learned augmentation policy.

Reduced from https://github.com/pytorch/pytorch/issues/11192 ("Cannot Backward Twice Through
Distribution"). The author built one ``pi = Bernoulli(p)`` from a leaf ``p`` and two losses from it,
``l1 = 2 * pi.log_prob(...)`` and ``l2 = 3 * pi.log_prob(...)``; ``l1.backward()`` worked and
``l2.backward()`` raised "Trying to backward through the graph a second time", although the two losses
share nothing but ``p``. A Bernoulli made from ``probs`` computes ``logits`` lazily on the first
``log_prob`` and caches them on the distribution object, so every loss made from that object goes
through the same logits node, whose saved tensors the first backward frees.

The training setting is the writer's: as in "Learn to Augment" (joint augmentation and network
optimisation for text recognition), an augmentation agent proposes harder distortions of the word
images. Here the agent is a table of per-operation probabilities trained by REINFORCE with the
recogniser's loss as reward; each rollout is backpropagated as soon as its reward is known, and the
policy distribution is built once per step.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Bernoulli

torch.manual_seed(0)

H, W, TEXT_LEN, N_CHARS = 16, 48, 4, 10
EOS, BOS = N_CHARS, N_CHARS + 1
GLYPHS = (torch.rand(N_CHARS, 10, 8) > 0.55).float()  # a bitmap font for the digits
ROLLOUTS, N_OPS = 2, 4


def render_words(n):
    text = torch.randint(0, N_CHARS, (n, TEXT_LEN))
    img = torch.zeros(n, 1, H, W)
    for i in range(TEXT_LEN):
        img[:, 0, 3:13, 4 + 10 * i:12 + 10 * i] = GLYPHS[text[:, i]]
    angle = 0.25 * (torch.rand(n) - 0.5)
    theta = torch.stack([torch.stack([angle.cos(), -angle.sin(), 0.1 * torch.randn(n)], 1),
                         torch.stack([angle.sin(), angle.cos(), 0.1 * torch.randn(n)], 1)], 1)
    img = F.grid_sample(img, F.affine_grid(theta, img.shape, align_corners=False), align_corners=False)
    return img, torch.cat([text, torch.full((n, 1), EOS)], 1)


def augment(img, ops):
    """ops[k] == 1 applies distortion k: noise, blur, low contrast, horizontal shear."""
    if ops[0]:
        img = img + 0.3 * torch.randn_like(img)
    if ops[1]:
        img = F.avg_pool2d(img, 3, 1, 1)
    if ops[2]:
        img = 0.3 * img + 0.35
    if ops[3]:
        shear = torch.tensor([[1.0, 0.3, 0.0], [0.0, 1.0, 0.0]]).expand(img.shape[0], 2, 3)
        img = F.grid_sample(img, F.affine_grid(shear, img.shape, align_corners=False), align_corners=False)
    return img


class Rectifier(nn.Module):
    """Spatial transformer: predicts an affine warp that straightens the word image."""

    def __init__(self):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(1, 8, 3, 2, 1), nn.ReLU(), nn.Conv2d(8, 16, 3, 2, 1), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d((1, 3)), nn.Flatten(), nn.Linear(48, 6))
        nn.init.zeros_(self.loc[-1].weight)
        self.loc[-1].bias.data = torch.tensor([1.0, 0, 0, 0, 1.0, 0])

    def forward(self, img):
        theta = self.loc(img).view(-1, 2, 3)
        return F.grid_sample(img, F.affine_grid(theta, img.shape, align_corners=False), align_corners=False)


class AttentionDecoder(nn.Module):
    def __init__(self, feat, hidden=64):
        super().__init__()
        self.embed = nn.Embedding(N_CHARS + 2, 32)
        self.cell = nn.GRUCell(32 + feat, hidden)
        self.att_h, self.att_f, self.att_v = nn.Linear(hidden, 64), nn.Linear(feat, 64), nn.Linear(64, 1)
        self.out = nn.Linear(hidden + feat, N_CHARS + 1)
        self.hidden = hidden

    def forward(self, feats, prev_chars):  # teacher forcing: prev_chars [B, T]
        h = feats.new_zeros(feats.shape[0], self.hidden)
        keys, logits = self.att_f(feats), []
        for t in range(prev_chars.shape[1]):
            alpha = self.att_v(torch.tanh(keys + self.att_h(h)[:, None])).softmax(1)
            context = (alpha * feats).sum(1)
            h = self.cell(torch.cat([self.embed(prev_chars[:, t]), context], 1), h)
            logits.append(self.out(torch.cat([h, context], 1)))
        return torch.stack(logits, 1)


class Recognizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.rectifier = Rectifier()
        self.encoder = nn.Sequential(nn.Conv2d(1, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                                     nn.Conv2d(32, 64, 3, 1, 1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d((2, 1)))
        self.decoder = AttentionDecoder(64)

    def forward(self, img, prev_chars):
        f = self.encoder(self.rectifier(img)).mean(2).transpose(1, 2)  # [B, W/2, 64]
        return self.decoder(f, prev_chars)


recognizer = Recognizer()
aug_probs = nn.Parameter(torch.full((N_OPS,), 0.5))
recognizer_opt = torch.optim.Adam(recognizer.parameters(), lr=2e-3)
policy_opt = torch.optim.SGD([aug_probs], lr=0.02)
baseline = math.log(N_CHARS + 1)  # the loss of a uniform guess

for step in range(40):
    images, targets = render_words(32)
    prev_chars = torch.cat([torch.full((32, 1), BOS), targets[:, :-1]], 1)
    recognizer_opt.zero_grad()
    policy_opt.zero_grad()
    policy = Bernoulli(probs=aug_probs)
    rewards = []
    for r in range(ROLLOUTS):
        ops = policy.sample()
        logits = recognizer(augment(images, ops), prev_chars)
        rec_loss = F.cross_entropy(logits.reshape(-1, N_CHARS + 1), targets.reshape(-1))
        (rec_loss / ROLLOUTS).backward()
        reward = rec_loss.detach() - baseline  # harder augmentations earn more
        policy_loss = -reward * policy.log_prob(ops).sum()
        policy_loss.backward()
        rewards.append(rec_loss.item())
    recognizer_opt.step()
    policy_opt.step()
    with torch.no_grad():
        aug_probs.clamp_(0.05, 0.95)
    mean_loss = sum(rewards) / ROLLOUTS
    baseline = 0.9 * baseline + 0.1 * mean_loss
    if step % 10 == 0:
        acc = (logits.argmax(-1) == targets).all(1).float().mean()
        print(f"step {step}: loss {mean_loss:.3f} word acc {acc:.2f} op probs {aug_probs.data.tolist()}")
