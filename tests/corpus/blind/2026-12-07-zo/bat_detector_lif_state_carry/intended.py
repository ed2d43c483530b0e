"""Spiking bat-call detector for a low-power acoustic monitoring station.

Source: https://github.com/norse/norse/issues/130 -- "Reused state crashes
subsequent backward passes": a LIF cell's returned state was fed into the next
forward after ``loss.backward()`` had run, and the next backward failed with
"Trying to backward through the graph a second time".  A maintainer answered that
a state reused across backward passes must be detached from the previous graph
by the user (or the graph retained), the module being meant to carry state
within one graph.

Here a two-layer leaky integrate-and-fire network reads a continuous ultrasonic
recording chunk by chunk (mel-band energies per frame), keeping the membrane
state between chunks so that calls spanning a chunk boundary are seen whole; each
chunk gets its own detection loss and optimizer step.  Synthetic spectrogram
frames with an FM-sweep pattern stand in for the recordings.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

N_BANDS = 20
HIDDEN = 40
CHUNK_FRAMES = 20
N_CHUNKS = 4
BATCH = 8


class SpikeFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return (v > 0).float()

    @staticmethod
    def backward(ctx, grad_out):
        (v,) = ctx.saved_tensors
        return grad_out / (1.0 + 10.0 * v.abs()) ** 2


class LIFLayer(nn.Module):
    def __init__(self, n_in, n_out, decay=0.85, threshold=1.0):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)
        self.decay = decay
        self.threshold = threshold

    def forward(self, x_seq, v=None):
        if v is None:
            v = torch.zeros(x_seq.size(1), self.fc.out_features)
        spikes = []
        for x in x_seq:
            v = self.decay * v + self.fc(x)
            s = SpikeFn.apply(v - self.threshold)
            v = v - s * self.threshold
            spikes.append(s)
        return torch.stack(spikes), v


class BatCallSNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.lif1 = LIFLayer(N_BANDS, HIDDEN)
        self.lif2 = LIFLayer(HIDDEN, HIDDEN)
        self.readout = nn.Linear(HIDDEN, 1)

    def forward(self, frames, state=None):
        v1, v2 = (None, None) if state is None else state
        s1, v1 = self.lif1(frames, v1)
        s2, v2 = self.lif2(s1, v2)
        logits = self.readout(s2).squeeze(-1)   # per-frame call logit
        return logits, (v1, v2)


def synth_recording():
    t = torch.arange(N_CHUNKS * CHUNK_FRAMES)
    frames = 0.3 * torch.rand(len(t), BATCH, N_BANDS)
    labels = torch.zeros(len(t), BATCH)
    for b in range(BATCH):
        start = torch.randint(0, len(t) - 14, (1,)).item()
        for k in range(12):
            band = N_BANDS - 1 - (k * N_BANDS) // 12
            frames[start + k, b, band] += 2.0
            labels[start + k, b] = 1.0
    return frames, labels


def train_on_stream(model, opt, frames, labels):
    state = None
    losses = []
    for c in range(N_CHUNKS):
        sl = slice(c * CHUNK_FRAMES, (c + 1) * CHUNK_FRAMES)
        logits, state = model(frames[sl], state)
        state = tuple(v.detach() for v in state)
        det_loss = F.binary_cross_entropy_with_logits(logits, labels[sl], pos_weight=torch.tensor(4.0))
        opt.zero_grad()
        det_loss.backward()
        opt.step()
        losses.append(det_loss.item())
    return sum(losses) / len(losses)


def main():
    detector = BatCallSNN()
    opt = torch.optim.Adam(detector.parameters(), lr=3e-3)
    for night in range(2):
        frames, labels = synth_recording()
        print(f"night {night}: mean chunk loss {train_on_stream(detector, opt, frames, labels):.4f}")


if __name__ == "__main__":
    main()
