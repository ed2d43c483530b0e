"""Sample-level recurrent waveform synthesiser trained with truncated BPTT every k1 steps.

Reduced from the PyTorch forum thread
https://discuss.pytorch.org/t/implementing-truncated-backpropagation-through-time/15500
("Implementing Truncated Backpropagation Through Time").  The author trains a recurrent
network on very long sequences and wants "every k1 steps backpropagate taking k2 back
steps".  With ``k1 == k2`` he detaches the state at each update; for ``k1 < k2`` the windows
overlap, and keeping the recurrent state attached so that the next update can reach k2 steps
back makes the next ``loss.backward()`` run into the part of the graph the previous update
already freed ("Trying to backward through the graph a second time").  albanD restates the
intent as a ``one_step_module(inp, state)`` called along the sequence and, every k1 steps,
``loss_module(output, target)`` backwarded through only the last k2 calls; the author's own
fallback, which the thread accepts as correct, is to recompute the overlap: re-run the last
k2 steps from the (detached) state that preceded them and backward that fresh graph.

Reduction: ``one_step_module`` is a GRU cell plus a linear read-out that predicts the next
audio sample of a synthetic long waveform (a sum of drifting sinusoids with noise), in the
manner of sample-level autoregressive synthesis; ``loss_module`` is MSE.  The user keeps the
state attached across updates (to let gradients reach k2 > k1 steps back) and backwards every
k1 steps: the second update fails.
"""
import math
from collections import deque

import torch
import torch.nn as nn

torch.manual_seed(3)

HPARAMS = {
    "hidden": 32,
    "seq_len": 96,
    "k1": 8,   # update every k1 samples
    "k2": 24,  # backpropagate k2 samples back
    "epochs": 2,
    "lr": 3e-3,
}


def synth_waveform(n):
    t = torch.arange(n, dtype=torch.float32)
    freq = 0.05 + 0.02 * torch.sin(t / 60.0)
    wave = 0.6 * torch.sin(2 * math.pi * freq * t) + 0.3 * torch.sin(2 * math.pi * 0.013 * t + 1.0)
    return wave + 0.02 * torch.randn(n)


class OneStep(nn.Module):
    """One step of the sample-level RNN: previous sample + state -> next-sample prediction."""

    def __init__(self, hidden):
        super().__init__()
        self.cell = nn.GRUCell(1, hidden)
        self.readout = nn.Linear(hidden, 1)

    def forward(self, inp, state):
        new_state = self.cell(inp, state)
        return self.readout(new_state), new_state


def train(one_step_module, loss_module, optimizer, wave, hp):
    k1, k2 = hp["k1"], hp["k2"]
    for epoch in range(hp["epochs"]):
        state = torch.zeros(1, hp["hidden"])
        window_states = deque(maxlen=k2)  # detached state before each of the last k2 steps
        window_inputs = deque(maxlen=k2)
        running = 0.0
        for i in range(wave.shape[0] - 1):
            inp = wave[i].view(1, 1)
            target = wave[i + 1].view(1, 1)
            window_states.append(state.detach())
            window_inputs.append(inp)
            with torch.no_grad():  # the running state only carries the sequence forward
                _, state = one_step_module(inp, state)
            if (i + 1) % k1 == 0:
                # recompute the last (up to) k2 steps from the state that preceded them
                h = window_states[0]
                for x in window_inputs:
                    output, h = one_step_module(x, h)
                loss = loss_module(output, target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                state = h.detach()
                running += loss.item()
        print(f"epoch {epoch}: loss {running:.4f}")


def main():
    hp = HPARAMS
    wave = synth_waveform(hp["seq_len"])
    one_step_module = OneStep(hp["hidden"])
    loss_module = nn.MSELoss()
    optimizer = torch.optim.Adam(one_step_module.parameters(), lr=hp["lr"])
    train(one_step_module, loss_module, optimizer, wave, hp)


if __name__ == "__main__":
    main()
