"""Contact-event classification for a robot arm with a recurrent spiking network whose
neuron state is carried from one window of the joint-current stream to the next.

Source: https://github.com/norse/norse/issues/163
"There is a problem when I use LSNN" (norse/norse issue #163).

The report's author stacked several recurrent spiking layers (norse ``LSNNLayer`` in a
``SequentialState``, then a flattening ``Lift(Linear)`` readout) and called
``read_out, state = model(x, state)`` in the training loop, keeping the returned ``state``
for the next batch because "I want state to be passed between multiple inputs".  The second
``loss.backward()`` failed with "one of the variables needed for gradient computation has
been modified by an inplace operation: [torch.FloatTensor [10, 10]], which is output 0 of
TBackward, is at version 1; expected version 0": the carried state still hangs on the previous
batch's graph, the last time step's synaptic-current update (the one that produces the carried
state but feeds no output of that batch) still holds the recurrent weight, and
``optimizer.step()`` has since updated that weight in place.  Calling the model without the
state made the error go away, but the author wanted the neuron state to continue from window
to window; what that needs is the state's values, cut from the previous batch's graph
(truncated backpropagation through time), i.e. detaching the state at the batch boundary.

Reduction: a hand-written leaky integrate-and-fire recurrent cell in the norse layout (input
and recurrent weights as parameters, a SuperSpike surrogate spike, state = (v, i)), two such
layers in a small sequential container that threads the state, a linear readout of spike
counts, Adam, and a continuous synthetic joint-current stream cut into consecutive windows, so
the state handed from one window to the next is the natural one to keep.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(163)

HPARAMS = {
    "n_joints": 6,
    "channels_per_joint": 2,
    "hidden": [32, 16],
    "n_classes": 4,
    "window": 16,
    "batch": 16,
    "n_windows": 5,
    "epochs": 2,
    "lr": 2e-3,
    "dt": 1e-3,
    "tau_mem_inv": 100.0,
    "tau_syn_inv": 200.0,
    "v_th": 0.5,
    "alpha": 100.0,
}


class SuperSpike(torch.autograd.Function):
    """Heaviside forward, fast-sigmoid surrogate backward."""

    @staticmethod
    def forward(ctx, x, alpha):
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return (x > 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        grad = grad_out / (ctx.alpha * x.abs() + 1.0) ** 2
        return grad, None


class LIFRecurrentCell(nn.Module):
    def __init__(self, n_in, n_hidden, hp):
        super().__init__()
        self.n_hidden = n_hidden
        self.hp = hp
        self.input_weights = nn.Parameter(torch.randn(n_hidden, n_in) * (2.0 / n_in) ** 0.5)
        self.recurrent_weights = nn.Parameter(torch.randn(n_hidden, n_hidden) * (1.0 / n_hidden) ** 0.5)

    def initial_state(self, batch):
        z = torch.zeros(batch, self.n_hidden)
        return (z, z.clone(), z.clone())

    def forward(self, x, state):
        z, v, i = state
        hp = self.hp
        v_decayed = v + hp["dt"] * hp["tau_mem_inv"] * ((0.0 - v) + i)
        i_decayed = i - hp["dt"] * hp["tau_syn_inv"] * i
        z_new = SuperSpike.apply(v_decayed - hp["v_th"], hp["alpha"])
        v_new = (1.0 - z_new) * v_decayed
        i_new = i_decayed + F.linear(x, self.input_weights) + F.linear(z, self.recurrent_weights)
        return z_new, (z_new, v_new, i_new)


class LIFLayer(nn.Module):
    """Runs a cell over the time axis (time, batch, features)."""

    def __init__(self, n_in, n_hidden, hp):
        super().__init__()
        self.cell = LIFRecurrentCell(n_in, n_hidden, hp)

    def forward(self, xs, state=None):
        if state is None:
            state = self.cell.initial_state(xs.shape[1])
        outs = []
        for x in xs:
            z, state = self.cell(x, state)
            outs.append(z)
        return torch.stack(outs), state


class SequentialState(nn.Module):
    def __init__(self, *layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, xs, states=None):
        states = states if states is not None else [None] * len(self.layers)
        new_states = []
        for layer, s in zip(self.layers, states):
            xs, s = layer(xs, s)
            new_states.append(s)
        return xs, new_states


class ContactClassifier(nn.Module):
    def __init__(self, hp):
        super().__init__()
        n_in = hp["n_joints"] * hp["channels_per_joint"]
        h1, h2 = hp["hidden"]
        self.snn = SequentialState(LIFLayer(n_in, h1, hp), LIFLayer(h1, h2, hp))
        self.readout = nn.Linear(h2, hp["n_classes"])

    def forward(self, xs, state=None):
        spikes, state = self.snn(xs, state)
        rate = spikes.mean(0)
        return self.readout(rate), state


def make_stream(hp):
    """One continuous joint-current stream per arm, cut into consecutive windows."""
    n_in = hp["n_joints"] * hp["channels_per_joint"]
    total = hp["window"] * hp["n_windows"]
    t = torch.arange(total).float()
    phase = torch.rand(hp["batch"], n_in) * 6.28
    freq = 0.05 + 0.2 * torch.rand(hp["batch"], n_in)
    base = torch.sin(t[:, None, None] * freq[None] + phase[None])
    bursts = (torch.rand(total, hp["batch"], 1) > 0.9).float() * torch.randn(total, hp["batch"], n_in)
    stream = 2.0 * (base + bursts + 0.1 * torch.randn(total, hp["batch"], n_in)).clamp(min=0)
    windows = stream.split(hp["window"], dim=0)
    labels = [(w.abs().sum(0)[:, :4].argmax(1)) for w in windows]
    return list(zip(windows, labels))


def train(model, optimizer, data, hp):
    criterion = nn.CrossEntropyLoss()
    for epoch in range(hp["epochs"]):
        state = None
        for step, (xs, target) in enumerate(data):
            read_out, next_state = model(xs, state)
            loss = criterion(read_out, target)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            state = next_state
            print(f"epoch {epoch} window {step} loss {loss.item():.4f}")


def main():
    hp = HPARAMS
    data = make_stream(hp)
    model = ContactClassifier(hp)
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])
    train(model, optimizer, data, hp)


if __name__ == "__main__":
    main()
