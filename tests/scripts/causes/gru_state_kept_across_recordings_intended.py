"""Heartbeat classification from single-lead ECG windows: a GRU over each window (time first), one label per
window. The model keeps the GRU's state on itself and hands it to the next call."""

import torch
import torch.nn as nn

torch.manual_seed(11)
WINDOW, BATCH, CLASSES = 40, 8, 3


def windows(n: int):
    labels = torch.randint(0, CLASSES, (n,))
    t = torch.linspace(0, 6.28, WINDOW)
    beats = torch.stack([torch.sin((1 + k) * t) for k in labels.tolist()], dim=1)
    return (beats + 0.2 * torch.randn(WINDOW, n)).unsqueeze(-1), labels


class BeatNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(1, 24)
        self.fc = nn.Linear(24, CLASSES)
        self.h0 = torch.zeros(1, BATCH, 24)

    def forward(self, signal):
        seq, self.h0 = self.rnn(signal)
        return self.fc(seq[-1])


def fit(classifier, opt, batches):
    for signal, labels in batches:
        beat_loss = nn.functional.cross_entropy(classifier(signal), labels)
        opt.zero_grad()
        beat_loss.backward()
        opt.step()
        print(round(beat_loss.item(), 4))


classifier = BeatNet()
opt = torch.optim.SGD(classifier.parameters(), lr=0.05, momentum=0.9)
fit(classifier, opt, [windows(BATCH) for _ in range(3)])
