"""Decoding reach direction from a Utah-array recording with an integrate-and-fire conv net.

Source: https://github.com/synsense/sinabs/issues/291
"RuntimeError: Trying to backward through the graph a second time (or directly access saved
tensors after they have already been freed) ..."

The author trained a small spiking CNN (Conv2d -> LIFSqueeze -> Dropout2d ...) with a plain
`train_epoch(model, loader, optimizer, loss_fn)` loop. After swapping `LIFSqueeze` for
`IAFSqueeze(batch_size=..., num_timesteps=1, spike_fn=..., surrogate_grad_fn=...,
tau_syn=None, spike_threshold=1, min_v_mem=-1.0, record_states=True)` the second
`loss.backward()` raised the error above. Sinabs' stateful layers keep their membrane
potential `v_mem` on the module between forward calls, so each batch's forward continued
from the previous batch's membrane tensor, whose graph had already been backwarded and freed.
The loop never reset the network's state between batches; the evident intent (and what the
sinabs examples do) is to reset the neuron states at the start of every batch, so each sample
window is integrated from rest.

Reduction: a hand-written `IAFSqueeze` (time folded into the batch dimension, membrane kept
on `self.v_mem`, subtractive reset, lower bound on v_mem, sigmoid surrogate gradient) inside
the same Conv -> IAF -> Dropout2d layout, decoding one of eight reach directions from binned
spike counts of an 8x8 electrode array. Synthetic tuned spike counts; Adam; the train loop
mirrors the report's `train_epoch` and never calls `reset_states()`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

HPARAMS = {
    "n_trials": 48,
    "batch_size": 16,
    "num_timesteps": 6,
    "n_directions": 8,
    "lr": 2e-3,
    "epochs": 2,
    "dropout_p": 0.1,
    "spike_threshold": 1.0,
    "min_v_mem": -1.0,
}


def surrogate_spike(v, threshold):
    """Heaviside forward, sigmoid derivative backward."""
    soft = torch.sigmoid(4.0 * (v - threshold))
    hard = (v >= threshold).float()
    return hard + (soft - soft.detach())


class IAFSqueeze(nn.Module):
    """Integrate-and-fire layer taking (batch*time, C, H, W); keeps v_mem between calls."""

    def __init__(self, batch_size, spike_threshold=1.0, min_v_mem=-1.0, record_states=True):
        super().__init__()
        self.batch_size = batch_size
        self.spike_threshold = spike_threshold
        self.min_v_mem = min_v_mem
        self.record_states = record_states
        self.v_mem = None
        self.recordings = {}

    def reset_states(self):
        self.v_mem = None

    def forward(self, x):
        t = x.shape[0] // self.batch_size
        x = x.reshape(self.batch_size, t, *x.shape[1:])
        if self.v_mem is None:
            self.v_mem = torch.zeros_like(x[:, 0])
        spikes, v_trace = [], []
        for step in range(t):
            v = self.v_mem + x[:, step]
            s = surrogate_spike(v, self.spike_threshold)
            v = v - s * self.spike_threshold
            v = torch.clamp(v, min=self.min_v_mem)
            self.v_mem = v
            spikes.append(s)
            v_trace.append(v)
        if self.record_states:
            self.recordings["v_mem"] = torch.stack(v_trace, 1)
        return torch.stack(spikes, 1).reshape(self.batch_size * t, *x.shape[2:])


class SpikingDecoder(nn.Module):
    def __init__(self, hp):
        super().__init__()
        bs = hp["batch_size"]
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.iaf1 = IAFSqueeze(bs, hp["spike_threshold"], hp["min_v_mem"])
        self.drop = nn.Dropout2d(p=hp["dropout_p"])
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, stride=2, padding=1)
        self.iaf2 = IAFSqueeze(bs, hp["spike_threshold"], hp["min_v_mem"])
        self.readout = nn.Linear(16 * 4 * 4, hp["n_directions"])
        self.num_timesteps = hp["num_timesteps"]
        self.batch_size = bs

    def reset_states(self):
        for m in self.modules():
            if isinstance(m, IAFSqueeze):
                m.reset_states()

    def forward(self, frames):
        # frames: (batch, time, 1, 8, 8) -> squeeze time into batch
        x = frames.reshape(-1, *frames.shape[2:])
        x = self.drop(self.iaf1(self.conv1(x)))
        x = self.iaf2(self.conv2(x))
        x = x.reshape(self.batch_size, self.num_timesteps, -1).mean(1)
        return self.readout(x)


def make_recordings(hp):
    """Cosine-tuned Poisson spike counts on an 8x8 array, one direction per trial."""
    n, t = hp["n_trials"], hp["num_timesteps"]
    preferred = torch.rand(8, 8) * 2 * torch.pi
    labels = torch.randint(0, hp["n_directions"], (n,))
    angle = labels.float() * 2 * torch.pi / hp["n_directions"]
    rate = 1.0 + 0.9 * torch.cos(angle[:, None, None] - preferred[None])
    rate = rate[:, None, None].expand(n, t, 1, 8, 8)
    counts = torch.poisson(rate)
    return counts, labels


def train_epoch(model, batches, optimizer, loss_fn):
    model.train()
    total = 0.0
    for frames, target in batches:
        optimizer.zero_grad()
        out = model(frames)
        loss = loss_fn(out, target)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(batches)


def main():
    torch.manual_seed(0)
    hp = HPARAMS
    counts, labels = make_recordings(hp)
    model = SpikingDecoder(hp)
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])
    loss_fn = nn.CrossEntropyLoss()
    bs = hp["batch_size"]
    for epoch in range(hp["epochs"]):
        perm = torch.randperm(hp["n_trials"])
        batches = [(counts[perm[i:i + bs]], labels[perm[i:i + bs]])
                   for i in range(0, hp["n_trials"], bs)]
        train_loss = train_epoch(model, batches, optimizer, loss_fn)
        print(f"epoch {epoch}: loss {train_loss:.4f}")


if __name__ == "__main__":
    main()
