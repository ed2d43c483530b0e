"""Stacked capsule autoencoder (SCAE) on MNIST-like digits: part capsules, then object capsules.

Reduced from https://github.com/phanideepgampa/stacked-capsule-networks/issues/15 (a PyTorch port of
Kosiorek et al.'s stacked capsule autoencoders). The part capsule autoencoder (PCAE) predicts, for every
part capsule, a 6-number pose that ``geometric_transform`` (adapted from the official TensorFlow code)
turns into an affine matrix used to place a learned template with ``F.affine_grid``/``F.grid_sample``.
The object capsule autoencoder (OCAE) then explains the detached part poses with a mixture of
object-part predictions. Both log-likelihoods are maximised together with one RMSprop optimizer,
as in the repository's ``main.py``. The author reports the training step failing with a newer PyTorch.

Synthetic 28x28 "digits" stand in for MNIST; the set transformer is replaced by a small MLP.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

NUM_PARTS = 6
NUM_OBJECTS = 4
TEMPLATE = 7
IMG = 28
BATCH = 8


class PCAE(nn.Module):
    def __init__(self, num_capsules=NUM_PARTS, feat=8):
        super().__init__()
        self.num_capsules = num_capsules
        self.feat = feat
        self.capsules = nn.Sequential(
            nn.Conv2d(1, 16, 3, stride=2),
            nn.ReLU(),
            nn.Conv2d(16, 16, 3, stride=2),
            nn.ReLU(),
            nn.Conv2d(16, num_capsules * feat, 1),
        )
        self.templates = nn.ParameterList(
            [nn.Parameter(torch.randn(1, TEMPLATE, TEMPLATE)) for _ in range(num_capsules)]
        )
        self.soft_max = nn.Softmax(1)
        self.relu = nn.ReLU()
        self.sigmoid = nn.Sigmoid()
        self.epsilon = torch.tensor(1e-6)

    def forward(self, x, noise):
        out = self.capsules(x)
        out = out.view(-1, self.num_capsules, self.feat, *out.shape[2:])
        attention = out[:, :, -1].flatten(2).softmax(-1).view_as(out[:, :, -1]).unsqueeze(2)
        params = (out[:, :, :-1] * attention).sum(-1).sum(-1)  # (B, M, 7)
        x_m = self.relu(params[:, :, :6])
        d_m = self.sigmoid(params[:, :, 6] + noise).unsqueeze(-1)

        B = x.shape[0]
        transformed = [
            F.grid_sample(
                self.templates[i].repeat(B, 1, 1, 1),
                F.affine_grid(self.geometric_transform(x_m[:, i, :]), (B, 1, IMG, IMG), align_corners=False),
                align_corners=False,
            )
            for i in range(self.num_capsules)
        ]
        transformed = torch.cat(transformed, 1)  # (B, M, 28, 28)
        mix_prob = self.soft_max(d_m * transformed.flatten(2)).view_as(transformed)
        detach_x = x.data
        std = detach_x.flatten(1).std(-1).view(-1, 1, 1, 1) + self.epsilon
        gaussians = (-((detach_x - transformed) ** 2) / (2 * std**2)).exp() / (std * math.sqrt(2 * math.pi))
        log_likelihood = ((gaussians * mix_prob).sum(1) + self.epsilon).log().sum(-1).sum(-1).mean()
        return log_likelihood, x_m.data, d_m.data

    @staticmethod
    def geometric_transform(pose_tensor, similarity=False, nonlinear=True):
        """Converts a [..., 6] pose tensor into an affine or similarity transform [..., 2, 3]."""
        scale_x, scale_y, theta, shear, trans_x, trans_y = torch.split(pose_tensor, 1, -1)

        if nonlinear:
            scale_x, scale_y = torch.sigmoid(scale_x) + 1e-2, torch.sigmoid(scale_y) + 1e-2
            trans_x, trans_y, shear = torch.tanh(trans_x * 5.0), torch.tanh(trans_y * 5.0), torch.tanh(shear * 5.0)
            theta *= 2.0 * math.pi
        else:
            scale_x, scale_y = (abs(i) + 1e-2 for i in (scale_x, scale_y))

        c, s = torch.cos(theta), torch.sin(theta)

        if similarity:
            scale = scale_x
            pose = [scale * c, -scale * s, trans_x, scale * s, scale * c, trans_y]
        else:
            pose = [
                scale_x * c + shear * scale_y * s,
                -scale_x * s + shear * scale_y * c,
                trans_x,
                scale_y * s,
                scale_y * c,
                trans_y,
            ]
        pose = torch.cat(pose, -1)
        return pose.reshape(*pose.shape[:-1], 2, 3)


class OCAE(nn.Module):
    def __init__(self, num_objects=NUM_OBJECTS, num_parts=NUM_PARTS, hidden=32):
        super().__init__()
        self.num_objects = num_objects
        self.encoder = nn.Sequential(nn.Linear(num_parts * 7, hidden), nn.ReLU(), nn.Linear(hidden, num_objects * 10))
        self.op_mat = nn.Parameter(torch.randn(num_objects, num_parts, 6) * 0.1)
        self.epsilon = torch.tensor(1e-6)

    def forward(self, x_m, d_m):
        B = x_m.shape[0]
        objects = self.encoder(torch.cat([x_m, d_m], -1).flatten(1)).view(B, self.num_objects, 10)
        a_k = torch.sigmoid(objects[:, :, 0]).unsqueeze(-1)  # (B, K, 1)
        ov_k = objects[:, :, 1:7].unsqueeze(2)  # (B, K, 1, 6)
        lambda_k = F.softplus(objects[:, :, 7:8]).unsqueeze(-1) + 0.1  # (B, K, 1, 1)
        mu = ov_k + self.op_mat  # (B, K, M, 6)
        diff = x_m.unsqueeze(1) - mu
        log_gauss = -0.5 * (diff**2).sum(-1) / lambda_k.squeeze(-1) - 3 * torch.log(2 * math.pi * lambda_k.squeeze(-1))
        weights = a_k / (a_k.sum(1, keepdim=True) + self.epsilon)
        mix = torch.logsumexp(log_gauss + (weights + self.epsilon).log(), dim=1)  # (B, M)
        return (mix * d_m.squeeze(-1)).sum(-1).mean(), a_k


class SCAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.pcae = PCAE()
        self.ocae = OCAE()

    def forward(self, x, noise):
        image_likelihood, x_m, d_m = self.pcae(x, noise)
        part_likelihood, a_k = self.ocae(x_m, d_m)
        return image_likelihood, part_likelihood, a_k


def scae_loss(out, b_c, k_c):
    image_likelihood, part_likelihood, a_k = out
    prior_sparsity = ((a_k.squeeze(-1).sum(1) - b_c) ** 2).mean()
    posterior_sparsity = ((a_k.squeeze(-1).sum(0) - k_c) ** 2).mean()
    return -image_likelihood - part_likelihood + 0.01 * (prior_sparsity + posterior_sparsity)


def make_digits(n):
    imgs = torch.zeros(n, 1, IMG, IMG)
    for i in range(n):
        r, c = torch.randint(4, 20, (2,)).tolist()
        imgs[i, 0, r : r + 8, c : c + 3] = 1.0
        imgs[i, 0, r + 3 : r + 5, c : c + 8] = 1.0
    return (imgs - 0.13) / 0.31


def train():
    scae = SCAE()
    optimizer = torch.optim.RMSprop(scae.parameters(), lr=1e-4, momentum=0.9, eps=1e-4)
    b_c = torch.tensor(float(BATCH / NUM_OBJECTS))
    k_c = torch.tensor(float(NUM_OBJECTS / 2))
    data = make_digits(4 * BATCH)
    for epoch in range(2):
        for batch_idx in range(4):
            x = data[batch_idx * BATCH : (batch_idx + 1) * BATCH]
            noise = torch.empty(BATCH, NUM_PARTS).uniform_(-2, 2)
            optimizer.zero_grad()
            scae.train()
            out = scae(x, noise)
            loss = scae_loss(out, b_c=b_c, k_c=k_c)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(scae.parameters(), 5)
            optimizer.step()
            print(f"epoch {epoch} batch {batch_idx} loss {loss.item():.4f}")


if __name__ == "__main__":
    train()
