"""Karting lap telemetry: predict the driver's throttle and brake application through each corner
segment from the kart's speed, lateral g, steering angle and track position.

Source: https://github.com/pytorch/pytorch/pull/58285 ("Merge CreationMeta MULTI_OUTPUT_SAFE with
MULTI_OUTPUT_NODE"), the end of the deprecation of in-place operations on views returned by
``split``/``split_with_sizes``/``chunk``: an in-place operation on such a view now raises "Output N of
... is a view and is being modified inplace. This view is the output of a function that returns
multiple views." The reduction: the pedal head emits throttle and brake for every segment in one
tensor, ``chunk`` splits it, and the pedal-constraint helper squashes the throttle and clamps the
brake in place on those chunks.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

SEGMENTS = 8          # corner segments per lap
CHANNELS = 4          # speed, lateral g, steering angle, distance from racing line
TRAIN = {"laps": 64, "batch": 16, "lr": 1e-3, "epochs": 3}


def synth_laps(n_laps):
    tele = torch.randn(n_laps, SEGMENTS, CHANNELS)
    speed, lat_g = tele[..., 0], tele[..., 1]
    throttle = torch.sigmoid(1.5 * speed - 0.8 * lat_g.abs())
    brake = F.relu(-1.2 * speed + 0.5 * lat_g.abs() - 0.2)
    return tele, throttle, brake


class PedalModel(nn.Module):
    def __init__(self, hidden=48):
        super().__init__()
        self.segment_enc = nn.Linear(CHANNELS, hidden)
        self.lap_mix = nn.GRU(hidden, hidden, batch_first=True)
        self.pedals = nn.Linear(hidden * SEGMENTS, 2 * SEGMENTS)

    @staticmethod
    def pedal_constraints(raw):
        throttle, brake = raw.chunk(2, dim=-1)
        throttle.sigmoid_()
        brake.clamp_(min=0.0)
        return throttle, brake

    def forward(self, tele):
        h, _ = self.lap_mix(torch.tanh(self.segment_enc(tele)))
        raw = self.pedals(h.reshape(h.shape[0], -1))
        return self.pedal_constraints(raw)


def evaluate_batch(driver_model, tele, throttle_t, brake_t):
    throttle, brake = driver_model(tele)
    return F.mse_loss(throttle, throttle_t) + 2.0 * F.mse_loss(brake, brake_t)


def main():
    tele, throttle_t, brake_t = synth_laps(TRAIN["laps"])
    driver_model = PedalModel()
    telemetry_optimizer = torch.optim.Adam(driver_model.parameters(), lr=TRAIN["lr"])
    for epoch in range(TRAIN["epochs"]):
        running = 0.0
        for i in range(0, TRAIN["laps"], TRAIN["batch"]):
            sl = slice(i, i + TRAIN["batch"])
            pedal_loss = evaluate_batch(driver_model, tele[sl], throttle_t[sl], brake_t[sl])
            telemetry_optimizer.zero_grad()
            pedal_loss.backward()
            telemetry_optimizer.step()
            running += pedal_loss.item()
        print(f"epoch {epoch}: pedal loss {running:.4f}")


if __name__ == "__main__":
    main()
