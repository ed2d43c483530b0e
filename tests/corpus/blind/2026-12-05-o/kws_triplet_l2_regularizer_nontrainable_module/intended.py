"""Keyword spotting with a triplet-loss encoder (Res8-style) and an L2-normalised embedding.

Reduced from https://github.com/roman-vygon/triplet_loss_kws/issues/6 : the author trains
a small residual conv encoder on log-mel features of spoken keywords with an online
triplet loss (random-negative triplet selection). As in the repository, the pipeline is
built from "neural modules": the L2 regulariser that normalises the embeddings is a
non-trainable module (the framework runs such modules without gradient tracking, since
they hold no parameters), and the loss is computed on its output.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)

N_MELS, N_FRAMES = 20, 32
NUM_CLASSES, PER_CLASS = 4, 4


class NeuralModule(nn.Module):
    """Base of every block of the pipeline."""


class NonTrainableModule(NeuralModule):
    """A block without parameters: the framework calls it without tracking gradients."""

    def __call__(self, *args, **kwargs):
        with torch.no_grad():
            return super().__call__(*args, **kwargs)


class Res8(NeuralModule):
    def __init__(self, hidden_size=16):
        super().__init__()
        self.conv0 = nn.Conv2d(1, hidden_size, 3, padding=1, bias=False)
        self.pool = nn.AvgPool2d(2)
        self.convs = nn.ModuleList([nn.Conv2d(hidden_size, hidden_size, 3, padding=1, bias=False) for _ in range(2)])
        self.bns = nn.ModuleList([nn.BatchNorm2d(hidden_size, affine=False) for _ in range(2)])

    def forward(self, audio_signal):
        x = audio_signal.unsqueeze(1)
        x = self.pool(F.relu(self.conv0(x)))
        old_x = x
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
            x = bn(F.relu(conv(x)))
            if i % 2 == 1:
                x = x + old_x
                old_x = x
        return x.mean(dim=(2, 3)).unsqueeze(-1)  # (B, D, T=1)


class L2Regularizer(NeuralModule):
    """Makes the sum of squares of each embedding equal to one."""

    def forward(self, embeds):
        return F.normalize(embeds, p=2, dim=1)


class RandomNegativeTripletSelector:
    def __init__(self, margin):
        self.margin = margin

    def get_triplets(self, embeddings, labels):
        emb = embeddings.detach().cpu().numpy()
        labels = labels.cpu().numpy()
        dist = ((emb[:, None, :] - emb[None, :, :]) ** 2).sum(-1)
        triplets = []
        for label in set(labels.tolist()):
            pos = np.where(labels == label)[0]
            neg = np.where(labels != label)[0]
            for a in range(len(pos)):
                for p in range(a + 1, len(pos)):
                    ap = dist[pos[a], pos[p]]
                    losses = ap - dist[pos[a], neg] + self.margin
                    hard = np.where(losses > 0)[0]
                    n = neg[np.random.choice(hard)] if len(hard) else neg[np.argmax(losses)]
                    triplets.append([pos[a], pos[p], n])
        return torch.LongTensor(np.array(triplets))


class OnlineTripletLoss(nn.Module):
    def __init__(self, margin, triplet_selector):
        super().__init__()
        self.margin = margin
        self.triplet_selector = triplet_selector

    def forward(self, embeds, targets):
        embeddings = torch.flatten(embeds, start_dim=-2)
        triplets = self.triplet_selector.get_triplets(embeddings, targets)
        ap_distances = (embeddings[triplets[:, 0]] - embeddings[triplets[:, 1]]).pow(2).sum(1)
        an_distances = (embeddings[triplets[:, 0]] - embeddings[triplets[:, 2]]).pow(2).sum(1)
        return F.relu(ap_distances - an_distances + self.margin).mean()


def balanced_batches(num_steps):
    """Synthetic log-mel 'keywords': each class has its own spectral template."""
    templates = torch.randn(NUM_CLASSES, N_MELS, N_FRAMES)
    for _ in range(num_steps):
        labels = torch.arange(NUM_CLASSES).repeat_interleave(PER_CLASS)
        feats = templates[labels] + 0.5 * torch.randn(len(labels), N_MELS, N_FRAMES)
        yield feats, labels


encoder = Res8(hidden_size=16)
l2_regularizer = L2Regularizer()
triplet_loss = OnlineTripletLoss(0.5, RandomNegativeTripletSelector(0.5))
optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-3, weight_decay=1e-3)

for step, (processed_signal, commands) in enumerate(balanced_batches(20)):
    encoded = encoder(audio_signal=processed_signal)
    encoded = l2_regularizer(embeds=encoded)
    train_loss = triplet_loss(embeds=encoded, targets=commands)

    optimizer.zero_grad()
    train_loss.backward()
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step}: triplet loss {train_loss.item():.4f}")
