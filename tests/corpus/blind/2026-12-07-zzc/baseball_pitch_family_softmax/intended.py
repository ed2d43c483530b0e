"""Baseball pitch-type classification with a two-level (family -> pitch type) softmax.

Source: https://discuss.pytorch.org/t/whats-wrong-about-the-grad-of-softmax-when-i-use-just-some-of-the-inputs-to-do-softmax/109266
The forum author applied softmax to only some of the inputs (a subset of the
logits) and compared the gradients with the full softmax; the answer pointed to
numerical precision and recommended log_softmax over log(softmax). This script
reduces that to a Statcast-style pitch classifier whose output distribution is
hierarchical: a family head (fastball / breaking / offspeed) and, within each
family, a softmax over only that family's subset of the pitch-type logits. The
per-family probabilities are written into the columns of the full softmax
output, and the log of that tensor goes into the NLL loss.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(23)

PITCH_TYPES = ["FF", "SI", "FC", "SL", "CU", "KC", "CH", "FS"]
FAMILIES = {
    "fastball": [0, 1, 2],
    "breaking": [3, 4, 5],
    "offspeed": [6, 7],
}
FEATURES = ["velo", "spin", "ivb", "hb", "rel_x", "rel_z", "ext", "axis_sin", "axis_cos", "vaa"]

HP = {"hidden": 48, "batch": 64, "epochs": 4, "batches_per_epoch": 2, "lr": 1e-3}


class PitchClassifier(nn.Module):
    def __init__(self, n_features, n_types, n_families, hidden):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(n_features, hidden),
            nn.SiLU(),
            nn.Linear(hidden, hidden),
            nn.SiLU(),
        )
        self.type_head = nn.Linear(hidden, n_types)
        self.family_head = nn.Linear(hidden, n_families)

    def forward(self, x):
        h = self.encoder(x)
        return self.type_head(h), self.family_head(h)


def hierarchical_probs(type_logits, family_logits):
    family_p = torch.softmax(family_logits, dim=1)
    probs = type_logits.new_zeros(type_logits.shape)
    for f, idx in enumerate(FAMILIES.values()):
        within = torch.softmax(type_logits[:, idx], dim=1)
        probs[:, idx] = within * family_p[:, f : f + 1]
    return probs


def family_of(types):
    lookup = torch.zeros(len(PITCH_TYPES), dtype=torch.long)
    for f, idx in enumerate(FAMILIES.values()):
        lookup[idx] = f
    return lookup[types]


def pitch_batch(n):
    types = torch.randint(0, len(PITCH_TYPES), (n,))
    centres = torch.linspace(-1, 1, len(PITCH_TYPES)).unsqueeze(1) * torch.linspace(0.5, 1.5, len(FEATURES))
    x = centres[types] + 0.6 * torch.randn(n, len(FEATURES))
    return x, types


def train_epoch(classifier, optimizer, hp):
    for _ in range(hp["batches_per_epoch"]):
        x, types = pitch_batch(hp["batch"])
        type_logits, family_logits = classifier(x)
        probs = hierarchical_probs(type_logits, family_logits)
        type_loss = F.nll_loss(torch.log(probs + 1e-8), types)
        family_loss = F.cross_entropy(family_logits, family_of(types))
        optimizer.zero_grad()
        (type_loss + 0.5 * family_loss).backward()
        optimizer.step()
    return type_loss.item(), family_loss.item()


def main():
    classifier = PitchClassifier(len(FEATURES), len(PITCH_TYPES), len(FAMILIES), HP["hidden"])
    optimizer = torch.optim.Adam(classifier.parameters(), lr=HP["lr"])
    for epoch in range(HP["epochs"]):
        t, f = train_epoch(classifier, optimizer, HP)
        print(f"epoch {epoch}: type nll {t:.3f}  family ce {f:.3f}")


if __name__ == "__main__":
    main()
