"""Time-to-return model for trained hawks from flight telemetry, with a momentum memory bank.

Source: https://github.com/Novartis/torchsurv/issues/44 ("momentum batch"). The
author trained a Cox model through torchsurv's ``Momentum`` wrapper: an online
network whose log hazards go into a deque memory bank together with the log
hazards of an EMA target network, the Cox partial likelihood being computed over
the whole bank. With ``BATCH_SIZE`` set below the size the bank was built for,
training failed after the first step, and ran when the batch was large enough.

Reduction (my own, from reading the ``Momentum`` code in the thread's version):
the online deque keeps ``maxlen`` entries, so when the loader's batches are
smaller than that, the online estimates of the previous step stay in the bank
and their (already backpropagated) graph is reached again by the next loss. The
setting is moved to falconry: a hawk's free-flight session is a survival record
(time until it returns to the lure, censored when the session is stopped) and the
covariates are summaries of its GPS/accelerometer telemetry.
"""
import collections
import copy

import torch
import torch.nn as nn

torch.manual_seed(7)

CONFIG = {
    "n_sessions": 96,
    "n_features": 10,
    "loader_batch": 12,
    "bank_batch": 24,
    "bank_steps": 3,
    "ema_rate": 0.98,
    "lr": 3e-3,
    "epochs": 2,
}

Record = collections.namedtuple("Record", ["estimate", "event", "time"])


def make_telemetry(n, d):
    """Session summaries: mean airspeed, climb, distance to falconer, wind, ..."""
    feats = torch.randn(n, d)
    risk = feats[:, 0] * 0.8 - feats[:, 3] * 0.5
    minutes = torch.distributions.Exponential(torch.exp(risk) * 0.1).sample()
    stopped_at = torch.rand(n) * 30.0 + 5.0
    returned = minutes <= stopped_at
    duration = torch.minimum(minutes, stopped_at)
    return feats, returned, duration


def cox_neg_partial_loglik(log_hz, event, time):
    order = torch.argsort(time, descending=True)
    log_hz, event = log_hz[order], event[order]
    log_risk_set = torch.logcumsumexp(log_hz, dim=0)
    contrib = (log_hz - log_risk_set)[event]
    return -contrib.sum() / event.sum().clamp(min=1)


class HazardNet(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU())
        self.out = nn.Linear(16, 1)

    def forward(self, x):
        return self.out(self.body(x)).squeeze(-1)


class MomentumSurvival(nn.Module):
    def __init__(self, backbone, batchsize, steps, rate):
        super().__init__()
        self.rate = rate
        self.online = copy.deepcopy(backbone)
        self.target = copy.deepcopy(backbone)
        for p in self.target.parameters():
            p.requires_grad_(False)
        self.memory_q = collections.deque(maxlen=batchsize)
        self.memory_k = collections.deque(maxlen=batchsize * steps)

    def forward(self, x, event, time):
        online_est = self.online(x)
        for rec in zip(online_est, event, time):
            self.memory_q.append(Record(*rec))
        loss = self._bank_loss()
        with torch.no_grad():
            self._ema_update()
            target_est = self.target(x)
            for rec in zip(target_est, event, time):
                self.memory_k.append(Record(*rec))
        return loss

    def _bank_loss(self):
        bank = list(self.memory_k) + list(self.memory_q)
        log_hz = torch.stack([r.estimate for r in bank])
        events = torch.stack([r.event for r in bank])
        times = torch.stack([r.time for r in bank])
        return cox_neg_partial_loglik(log_hz, events, times)

    @torch.no_grad()
    def _ema_update(self):
        for p_on, p_tg in zip(self.online.parameters(), self.target.parameters()):
            p_tg.mul_(self.rate).add_(p_on, alpha=1.0 - self.rate)


def batches(feats, returned, duration, size):
    perm = torch.randperm(feats.shape[0])
    for i in range(0, feats.shape[0], size):
        idx = perm[i:i + size]
        yield feats[idx], returned[idx], duration[idx]


def main():
    cfg = CONFIG
    feats, returned, duration = make_telemetry(cfg["n_sessions"], cfg["n_features"])
    backbone = HazardNet(cfg["n_features"])
    hawk_model = MomentumSurvival(backbone, cfg["bank_batch"], cfg["bank_steps"], cfg["ema_rate"])
    optimizer = torch.optim.Adam(hawk_model.online.parameters(), lr=cfg["lr"])

    for epoch in range(cfg["epochs"]):
        running = 0.0
        for step, (x, ev, t) in enumerate(batches(feats, returned, duration, cfg["loader_batch"])):
            optimizer.zero_grad()
            cox_loss = hawk_model(x, ev, t)
            cox_loss.backward()
            optimizer.step()
            running += cox_loss.item()
        print(f"epoch {epoch}: partial-likelihood loss {running / (step + 1):.4f}")


if __name__ == "__main__":
    main()
