"""CRNN text recogniser trained with a CTC loss written in plain PyTorch.

Source: https://github.com/pytorch/pytorch/issues/31819
The author implemented CTC in Python (to modify it later): the forward variable
alpha is one tensor of shape (time, batch, extended label), filled row by row in
place, each row the log-sum of three shifted copies of the previous row. With
``torch.logsumexp`` for that log-sum the loss trains; with a hand-written
"faster on CPU" logadd (a running ``torch.max`` and exp/log around it) the
backward fails with "one of the variables needed for gradient computation has
been modified by an inplace operation": ``torch.max(a, b)`` saves its inputs,
which are views of alpha's previous row, and the next row's write bumps alpha's
version. The report benchmarks the loss on random logits; the CRNN around it and
the synthetic "word images" are the writer's, the training setting is the
writer's.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

NUM_CLASSES = 11  # blank + 10 digits
BLANK = 0
NEG = -1e4
H, W = 16, 32
LABEL_LEN = 3


class CRNN(nn.Module):
    def __init__(self, num_classes=NUM_CLASSES, hidden=32):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.rnn = nn.LSTM(32 * (H // 4), hidden, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, num_classes)

    def forward(self, images):
        feats = self.cnn(images)  # B, C, H/4, W/4
        b, c, h, w = feats.shape
        seq = feats.permute(3, 0, 1, 2).reshape(w, b, c * h)  # T, B, F
        out, _ = self.rnn(seq)
        return F.log_softmax(self.fc(out), dim=-1)  # T, B, C


def logadd(*xs):
    return torch.logsumexp(torch.stack(xs), dim=0)


def ctc_loss(log_probs, targets, blank=BLANK):
    """Negative log-likelihood of the targets, by the alpha (forward) recursion."""
    T, B, _ = log_probs.shape
    S = 2 * targets.shape[1] + 1
    ext = torch.full((B, S), blank, dtype=torch.long)
    ext[:, 1::2] = targets
    emit = log_probs.gather(2, ext.unsqueeze(0).expand(T, B, S))
    can_skip = torch.zeros(B, S, dtype=torch.bool)
    can_skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])

    alpha = torch.full((T, B, S), NEG)
    alpha[0, :, :2] = emit[0, :, :2]
    for t in range(1, T):
        prev = alpha[t - 1]
        prev1 = F.pad(prev[:, :-1], (1, 0), value=NEG)
        prev2 = torch.where(can_skip, F.pad(prev[:, :-2], (2, 0), value=NEG), torch.full_like(prev, NEG))
        alpha[t] = logadd(prev, prev1, prev2) + emit[t]
    log_likelihood = logadd(alpha[T - 1, :, -1], alpha[T - 1, :, -2])
    return -log_likelihood.mean()


def render_batch(batch_size):
    """Synthetic word images: each digit paints a stripe pattern in its third of the image."""
    labels = torch.randint(1, NUM_CLASSES, (batch_size, LABEL_LEN))
    images = 0.1 * torch.randn(batch_size, 1, H, W)
    rows = torch.arange(H)
    for i in range(LABEL_LEN):
        x0 = i * (W // LABEL_LEN) + 1
        pattern = ((rows[None, :] % (labels[:, i:i + 1] % 4 + 2)) == 0).float()  # B, H
        images[:, 0, :, x0:x0 + 8] += pattern[:, :, None] * (labels[:, i, None, None] / 10.0)
    return images, labels


model = CRNN()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for step in range(10):
    images, labels = render_batch(16)
    log_probs = model(images)
    loss = ctc_loss(log_probs, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 3 == 0:
        print(f"step {step} ctc {loss.item():.3f}")
