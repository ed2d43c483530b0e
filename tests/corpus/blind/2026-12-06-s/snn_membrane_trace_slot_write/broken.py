"""Spiking neural network (LIF layers, surrogate gradients) writing its membrane trace into a preallocated tensor.

Report: https://github.com/yuunnn-w/RWKV_Pytorch/pull/11
In that pull request (a recurrent RWKV model) the state was written slot by slot into a preallocated
tensor inside the time loop ("为反向传播，修改循环赋值": changed the loop assignment so that backward
works), which breaks backward: the step that read a slot saved it for its gradient, and the next
slot assignment into the same tensor bumps its version, so backward fails with "one of the variables
needed for gradient computation has been modified by an inplace operation". The fix makes the loop
build new tensors (a clone per step) instead of writing into the shared one.
The training setting is the writer's: a two-layer LIF network trained with a fast-sigmoid surrogate
gradient on rate-coded inputs, whose layers record the membrane potential of every time step into
``mem[t + 1]`` of one buffer, with a multiplicative hard reset ``mem[t + 1] * (1 - spk[t])``.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

T, BATCH, N_IN, N_HID, N_OUT = 12, 16, 20, 32, 4


class FastSigmoidSpike(torch.autograd.Function):
    slope = 10.0

    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return (v > 0).float()

    @staticmethod
    def backward(ctx, grad_out):
        (v,) = ctx.saved_tensors
        return grad_out / (FastSigmoidSpike.slope * v.abs() + 1.0) ** 2


spike_fn = FastSigmoidSpike.apply


class LIFLayer(nn.Module):
    def __init__(self, n_in, n_out, beta=0.9, threshold=1.0):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)
        self.beta, self.threshold = beta, threshold

    def forward(self, x_seq):
        steps, batch, _ = x_seq.shape
        cur = self.fc(x_seq)
        mem = torch.zeros(steps + 1, batch, self.fc.out_features)  # mem[0] is the resting potential
        spk = torch.zeros(steps, batch, self.fc.out_features)
        for t in range(steps):
            mem[t + 1] = self.beta * mem[t] + cur[t]
            spk[t] = spike_fn(mem[t + 1] - self.threshold)
            mem[t + 1] = mem[t + 1] * (1 - spk[t])  # hard reset of the neurons that fired
        return spk, mem[1:]


class SpikingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = LIFLayer(N_IN, N_HID)
        self.readout = LIFLayer(N_HID, N_OUT)

    def forward(self, x_seq):
        spk1, _ = self.hidden(x_seq)
        spk2, mem2 = self.readout(spk1)
        return spk2, mem2


def make_dataset(n):
    rates = torch.rand(n, N_IN)
    teacher = torch.randn(N_IN, N_OUT)
    labels = (rates @ teacher).argmax(1)
    spikes = (torch.rand(T, n, N_IN) < rates.unsqueeze(0) * 0.6).float()
    return spikes, labels


spikes, labels = make_dataset(128)
net = SpikingNet()
optimizer = torch.optim.Adam(net.parameters(), lr=2e-3)

for epoch in range(3):
    for i in range(0, labels.shape[0], BATCH):
        x, y = spikes[:, i:i + BATCH], labels[i:i + BATCH]
        spk_out, mem_out = net(x)
        logits = mem_out.mean(0) + spk_out.sum(0)
        ce_loss = F.cross_entropy(logits, y)
        rate_loss = 1e-3 * spk_out.mean()
        loss = ce_loss + rate_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    acc = (logits.argmax(1) == y).float().mean().item()
    print(f"epoch {epoch} loss {loss.item():.4f} last-batch acc {acc:.2f}")
