"""Surgical workflow: phase recognition over short clips of laparoscopic video features.

Source: https://github.com/sgadgil6/cnslab_fmri/issues/4 -- ``run_training_lstm.py``
stopped at ``loss.backward()`` with "Trying to backward through the graph a second
time"; with ``retain_graph=True`` it ran out of memory. The model kept its LSTM state on
the module (``self.hidden = self.init_hidden()`` in ``__init__``, then
``lstm_out, self.hidden = self.lstm(x, self.hidden)``); the fix posted in the thread is
``lstm_out, self.hidden = self.lstm(x)`` -- "you don't need to pass hidden layer state".

Reduction: the fMRI time series become per-frame features of surgical video clips
(as a frozen frame CNN would give them), a small projection, an LSTM over the clip and a
per-clip phase classifier; the state is created in ``__init__`` and kept on the module
exactly as in the report.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

PHASES = ["preparation", "calot_triangle", "clipping", "dissection", "packaging", "cleaning", "retraction"]
CFG = dict(n_clips=128, clip_len=16, feat_dim=48, hidden=32, batch=16, lr=2e-3, epochs=2)


def synthetic_clips(cfg):
    labels = torch.randint(0, len(PHASES), (cfg["n_clips"],))
    centers = torch.randn(len(PHASES), cfg["feat_dim"])
    frames = centers[labels].unsqueeze(1) + 0.8 * torch.randn(cfg["n_clips"], cfg["clip_len"], cfg["feat_dim"])
    return frames, labels


class PhaseLSTM(nn.Module):
    def __init__(self, feat_dim, hidden, n_phases, batch):
        super().__init__()
        self.hidden_dim = hidden
        self.batch = batch
        self.proj = nn.Sequential(nn.Linear(feat_dim, hidden), nn.ReLU())
        self.lstm = nn.LSTM(hidden, hidden, num_layers=1, batch_first=True)
        self.dropout = nn.Dropout(0.2)
        self.classifier = nn.Linear(hidden, n_phases)
        self.hidden = self.init_hidden()

    def init_hidden(self):
        return (torch.randn(1, self.batch, self.hidden_dim), torch.randn(1, self.batch, self.hidden_dim))

    def forward(self, frames):
        x = self.proj(frames)
        lstm_out, self.hidden = self.lstm(x)
        last = lstm_out[:, -1, :]
        return self.classifier(self.dropout(last))


def run_epoch(net, optimizer, frames, labels, batch):
    net.train()
    total, correct = 0.0, 0
    order = torch.randperm(frames.shape[0])
    for start in range(0, frames.shape[0], batch):
        idx = order[start:start + batch]
        logits = net(frames[idx])
        phase_loss = F.cross_entropy(logits, labels[idx])
        optimizer.zero_grad()
        phase_loss.backward()
        optimizer.step()
        total += phase_loss.item()
        correct += (logits.argmax(1) == labels[idx]).sum().item()
    return total, correct / frames.shape[0]


def main():
    frames, labels = synthetic_clips(CFG)
    net = PhaseLSTM(CFG["feat_dim"], CFG["hidden"], len(PHASES), CFG["batch"])
    optimizer = torch.optim.RMSprop(net.parameters(), lr=CFG["lr"])
    for epoch in range(CFG["epochs"]):
        loss_sum, acc = run_epoch(net, optimizer, frames, labels, CFG["batch"])
        print(f"epoch {epoch} loss {loss_sum:.3f} acc {acc:.3f}")


if __name__ == "__main__":
    main()
