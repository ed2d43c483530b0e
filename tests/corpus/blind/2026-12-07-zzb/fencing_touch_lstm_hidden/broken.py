"""Fencing bout touch detection from blade-accelerometer windows.

Source: https://github.com/pytorch/pytorch/issues/2769 ("LSTM architecture has met a
explosive growth in the training process"). The author wrote an nn.LSTM classifier whose
recurrent state ``self.hidden`` is created once in ``__init__`` by ``init_hidden()`` and
overwritten in ``forward`` by the state the LSTM returns (``lstm_out, self.hidden =
self.lstm(x, self.hidden)``); the training loop never resets it, so every batch's graph
hangs on the previous batch's. On the PyTorch of the report memory grew without bound;
on current PyTorch the second ``backward`` walks into the first batch's freed graph.

Reduction (the writer's): the report's video-feature classifier becomes a touch
classifier over short windows of a fencer's blade accelerometer (no touch, touch left,
touch right, double touch), synthetic data, small sizes. The state handling is the
report's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)

CFG = {
    "n_windows": 64,
    "seq_len": 24,
    "channels": 6,
    "hidden": 32,
    "n_classes": 4,
    "batch_size": 8,
    "lr": 1e-3,
    "epochs": 2,
}


def make_bouts(cfg):
    signals = torch.randn(cfg["n_windows"], cfg["seq_len"], cfg["channels"])
    peak = signals[:, :, :3].abs().amax(dim=1)
    labels = (peak.argmax(dim=1) + (peak.sum(dim=1) > 6).long()) % cfg["n_classes"]
    return signals, labels


class TouchLSTM(nn.Module):
    def __init__(self, channels, hidden, n_classes, batch_size):
        super().__init__()
        self.hidden_len = hidden
        self.batch_size = batch_size
        self.lstm = nn.LSTM(channels, hidden, batch_first=True)
        self.hidden2class = nn.Linear(hidden, n_classes)
        self.hidden = self.init_hidden()

    def init_hidden(self):
        return (torch.zeros(1, self.batch_size, self.hidden_len),
                torch.zeros(1, self.batch_size, self.hidden_len))

    def forward(self, x):
        lstm_out, self.hidden = self.lstm(x, self.hidden)
        scores = self.hidden2class(lstm_out[:, -1, :])
        return F.log_softmax(scores, dim=1)


def batches(signals, labels, batch_size):
    order = torch.randperm(signals.shape[0])
    for start in range(0, signals.shape[0] - batch_size + 1, batch_size):
        idx = order[start:start + batch_size]
        yield signals[idx], labels[idx]


def train(model, signals, labels, criterion, optimizer, epoch):
    model.train()
    total = 0.0
    for i, (windows, target) in enumerate(batches(signals, labels, CFG["batch_size"])):
        scores = model(windows)
        touch_loss = criterion(scores, target)
        optimizer.zero_grad()
        touch_loss.backward()
        optimizer.step()
        total += touch_loss.item()
    print(f"epoch {epoch}: mean nll {total / (i + 1):.4f}")


def main():
    signals, labels = make_bouts(CFG)
    model = TouchLSTM(CFG["channels"], CFG["hidden"], CFG["n_classes"], CFG["batch_size"])
    criterion = nn.NLLLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=CFG["lr"])
    for epoch in range(CFG["epochs"]):
        train(model, signals, labels, criterion, optimizer, epoch)


if __name__ == "__main__":
    main()
