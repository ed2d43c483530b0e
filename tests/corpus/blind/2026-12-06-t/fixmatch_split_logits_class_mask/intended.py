"""FixMatch on synthetic features: one forward over labelled, weak and strong batches, split afterwards.

Source: https://github.com/Skype-line/X-Avatar/issues/12. There the author's model evaluated a whole
concatenated batch once, cut the output back into groups with ``torch.split``, reshaped each group and
then masked invalid candidates in place before a min/max reduction (``vec[~mask.bool()] = 1`` in
``masked_softmax``); training stopped with "Output 0 of ReshapeAliasBackward0 is a view and is being
modified inplace. This view is the output of a function that returns multiple views". The training
setting is the writer's: a FixMatch trainer that, like the reference implementation, runs labelled,
weakly and strongly augmented unlabelled images through the model in one batch and splits the logits;
before taking pseudo-labels it masks classes that have no labelled example yet, in place on the split
weak-view logits. The fix is the out-of-place form of the same masking (``masked_fill``), as the
error message asks.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

NUM_CLASSES, DIM = 10, 32
BATCH, MU = 16, 3
THRESHOLD, LAMBDA_U, T = 0.6, 1.0, 1.0


class WideMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Linear(DIM, 128), nn.BatchNorm1d(128), nn.LeakyReLU(0.1),
            nn.Linear(128, 128), nn.BatchNorm1d(128), nn.LeakyReLU(0.1),
        )
        self.fc = nn.Linear(128, NUM_CLASSES)

    def forward(self, x):
        return self.fc(self.features(x))


def weak_augment(x):
    return x + 0.05 * torch.randn_like(x)


def strong_augment(x):
    keep = (torch.rand_like(x) > 0.2).float()
    return (x + 0.3 * torch.randn_like(x)) * keep


class EMA:
    def __init__(self, model, decay=0.999):
        self.shadow = {k: v.detach().clone() for k, v in model.state_dict().items()}
        self.decay = decay

    @torch.no_grad()
    def update(self, model):
        for k, v in model.state_dict().items():
            if v.dtype.is_floating_point:
                self.shadow[k].mul_(self.decay).add_(v.detach(), alpha=1 - self.decay)
            else:
                self.shadow[k].copy_(v)


centers = torch.randn(NUM_CLASSES, DIM) * 2
labeled_y = torch.randint(0, 7, (64,))  # the labelled split only covers seven classes so far
labeled_x = centers[labeled_y] + torch.randn(64, DIM)
unlabeled_y = torch.randint(0, NUM_CLASSES, (512,))
unlabeled_x = centers[unlabeled_y] + torch.randn(512, DIM)
seen_classes = torch.zeros(NUM_CLASSES, dtype=torch.bool)
seen_classes[labeled_y.unique()] = True

model = WideMLP()
optimizer = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9, nesterov=True, weight_decay=5e-4)
ema = EMA(model)

model.train()
for step in range(30):
    li = torch.randint(0, labeled_x.size(0), (BATCH,))
    ui = torch.randint(0, unlabeled_x.size(0), (BATCH * MU,))
    inputs_x, targets_x = weak_augment(labeled_x[li]), labeled_y[li]
    inputs_u_w, inputs_u_s = weak_augment(unlabeled_x[ui]), strong_augment(unlabeled_x[ui])

    inputs = torch.cat([inputs_x, inputs_u_w, inputs_u_s])
    logits = model(inputs)
    logits_x, logits_u_w, logits_u_s = logits.split([BATCH, BATCH * MU, BATCH * MU])

    Lx = F.cross_entropy(logits_x, targets_x)

    # no pseudo-labels for classes nobody has labelled yet
    logits_u_w = logits_u_w.masked_fill(~seen_classes, -1e4)
    pseudo_label = torch.softmax(logits_u_w.detach() / T, dim=-1)
    max_probs, targets_u = torch.max(pseudo_label, dim=-1)
    mask = max_probs.ge(THRESHOLD).float()
    Lu = (F.cross_entropy(logits_u_s, targets_u, reduction="none") * mask).mean()

    loss = Lx + LAMBDA_U * Lu
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    ema.update(model)
    if step % 10 == 0:
        print(f"step {step} Lx {Lx.item():.3f} Lu {Lu.item():.3f} mask {mask.mean().item():.2f}")
