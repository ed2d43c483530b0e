"""Greenhouse irrigation control: predict next-hour substrate moisture per bench and valve plan.

Source: https://stackoverflow.com/questions/74191070 ("Why there are two different flags to
disable gradient computation in PyTorch"). The author saw ``torch.inference_mode()`` used in place
of ``torch.no_grad()`` for the evaluation passes of RL experiments and asked how the two differ; the
answer: inference mode also drops version counting and view tracking, so tensors created under it
are inference tensors that can never be used in a computation autograd records. Reusing such a
tensor in training fails with "Inference tensors cannot be saved for backward"; ``no_grad()`` makes
ordinary tensors without history.

Reduction: a frozen climate encoder (pre-trained on another house) turns each bench's sensor window
into a climate embedding. A helper decorated with ``@torch.inference_mode()``, written for the
evaluation loop, fills a per-bench embedding cache once; the moisture model trained afterwards
reads the cache and a valve-schedule branch, fitting next-hour volumetric water content.
"""
import torch
import torch.nn as nn

torch.manual_seed(5)

GH = {"benches": 24, "window": 18, "sensors": 5, "embed": 16, "valves": 4, "lr": 2e-3,
      "epochs": 4, "batch": 8}


def greenhouse_log(gh):
    climate = torch.randn(gh["benches"], gh["window"], gh["sensors"])
    valve_plan = torch.rand(gh["benches"], gh["valves"])
    vwc_now = 0.3 + 0.05 * torch.randn(gh["benches"], 1)
    vpd = climate[:, -6:, 1].mean(dim=1, keepdim=True)
    vwc_next = vwc_now + 0.04 * valve_plan.sum(dim=1, keepdim=True) - 0.03 * vpd.abs()
    return climate, valve_plan, vwc_now, vwc_next


class ClimateEncoder(nn.Module):
    def __init__(self, sensors, embed):
        super().__init__()
        self.gru = nn.GRU(sensors, embed, batch_first=True)

    def forward(self, window):
        _, h = self.gru(window)
        return h[-1]


@torch.no_grad()
def embed_benches(encoder, climate):
    encoder.eval()
    return encoder(climate)


class MoistureModel(nn.Module):
    def __init__(self, embed, valves):
        super().__init__()
        self.climate_proj = nn.Linear(embed, 16)
        self.valve_branch = nn.Sequential(nn.Linear(valves + 1, 16), nn.SiLU())
        self.head = nn.Sequential(nn.SiLU(), nn.Linear(16, 1))

    def forward(self, climate_emb, valve_plan, vwc_now):
        h = self.climate_proj(climate_emb) + self.valve_branch(torch.cat([valve_plan, vwc_now], dim=1))
        return vwc_now + 0.1 * torch.tanh(self.head(h))


def main(gh=GH):
    climate, valve_plan, vwc_now, vwc_next = greenhouse_log(gh)
    encoder = ClimateEncoder(gh["sensors"], gh["embed"])
    for p in encoder.parameters():
        p.requires_grad_(False)
    bench_cache = embed_benches(encoder, climate)

    moisture = MoistureModel(gh["embed"], gh["valves"])
    optim = torch.optim.Adam(moisture.parameters(), lr=gh["lr"])
    for epoch in range(gh["epochs"]):
        for start in range(0, gh["benches"], gh["batch"]):
            rows = slice(start, start + gh["batch"])
            pred = moisture(bench_cache[rows], valve_plan[rows], vwc_now[rows])
            vwc_loss = nn.functional.mse_loss(pred, vwc_next[rows])
            optim.zero_grad()
            vwc_loss.backward()
            optim.step()
        print(f"epoch {epoch}: {vwc_loss.item():.5f}")


if __name__ == "__main__":
    main()
