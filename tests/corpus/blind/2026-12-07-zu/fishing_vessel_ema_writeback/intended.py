"""Fishing-vessel track prediction from AIS pings, with an exponential moving average of the weights.

Source: https://discuss.pytorch.org/t/how-to-apply-exponential-moving-average-decay-for-variables/10856
The thread gives an EMA helper (a shadow copy per parameter, ``ema(name, param.data)``) and
asks whether the averaged values should be assigned back into the parameters so that "the
moving averaged results will be used for the next iterations". The writer reduces the
version that assigns back: an ``EMA`` object whose ``update_and_assign(model)`` averages and
then copies the shadow into each parameter in place, called by the training step once the
loss is computed. The setting (a GRU over the last pings of a trawler -> next position
offset and speed) is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

SETTINGS = {"vessels": 96, "pings": 12, "feat": 5, "hidden": 32, "batch": 16,
            "epochs": 2, "lr": 2e-3, "decay": 0.9}


def make_tracks(n, t, d):
    """(lat offset, lon offset, speed, course sin, course cos) per ping; target: next offset and speed."""
    steps = torch.randn(n, t, d) * 0.3
    steps[:, :, 2] = steps[:, :, 2].abs() + 1.0
    tracks = steps.cumsum(dim=1)
    target = torch.stack([steps[:, -1, 0] * 1.1, steps[:, -1, 1] * 0.9, steps[:, -1, 2]], dim=1)
    return tracks, target


class TrackPredictor(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.gru = nn.GRU(d, hidden, batch_first=True)
        self.out = nn.Linear(hidden, 3)

    def forward(self, tracks):
        _, h = self.gru(tracks)
        return self.out(h[-1])


class EMA:
    def __init__(self, model, decay):
        self.decay = decay
        self.shadow = {n: p.detach().clone() for n, p in model.named_parameters()}

    @torch.no_grad()
    def update_and_assign(self, model):
        for name, param in model.named_parameters():
            avg = self.shadow[name]
            avg.mul_(self.decay).add_(param.detach(), alpha=1.0 - self.decay)
            param.copy_(avg)


def train_step(tracker, optimizer, ema, tracks, target):
    optimizer.zero_grad()
    pred = tracker(tracks)
    track_loss = F.mse_loss(pred[:, :2], target[:, :2]) + 0.1 * F.l1_loss(pred[:, 2], target[:, 2])
    track_loss.backward()
    optimizer.step()
    ema.update_and_assign(tracker)
    return track_loss.item()


def main():
    tracks, target = make_tracks(SETTINGS["vessels"], SETTINGS["pings"], SETTINGS["feat"])
    tracker = TrackPredictor(SETTINGS["feat"], SETTINGS["hidden"])
    optimizer = torch.optim.Adam(tracker.parameters(), lr=SETTINGS["lr"])
    ema = EMA(tracker, SETTINGS["decay"])
    for epoch in range(SETTINGS["epochs"]):
        perm = torch.randperm(tracks.shape[0])
        total = 0.0
        for i in range(0, tracks.shape[0], SETTINGS["batch"]):
            idx = perm[i:i + SETTINGS["batch"]]
            total += train_step(tracker, optimizer, ema, tracks[idx], target[idx])
        print(f"epoch {epoch}: loss {total:.4f}")


if __name__ == "__main__":
    main()
