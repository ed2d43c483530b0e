"""Track-irregularity estimation from bogie accelerometers with a stacked recurrent model
trained by truncated backpropagation through time (TBPTT), where only the input layer's
hidden state is detached at each truncation.

Source: https://github.com/NeuroTorch/NeuroTorch/issues/134
"TBPTT - Error using multiple layers" (NeuroTorch/NeuroTorch issue #134; fixed by pull
request #137, "Detach hidden states automatically after call").

The report: a ``SequentialRNN`` made of several recurrent layers, trained with NeuroTorch's
TBPTT callback, fails with "Trying to backward through the graph a second time (or directly
access saved tensors after they have already been freed)" as soon as there is more than one
layer.  The TBPTT step backpropagates the loss of a chunk of time steps, steps the
optimizer and carries the hidden states on into the next chunk.  The report shows no code
beyond the error; the fixing pull request's title says what was missing: the hidden states
are now detached automatically after each call, i.e. every layer's state, not only the one
that was being cut.  My reading, which the reduction encodes: with one layer the truncation
worked, with several the deeper layers' states kept the previous chunk's graph, so the next
chunk's backward ran into the part the previous backward had already freed.  The intent is
the usual truncation: gradients flow within a chunk, the state values carry on.

Reduction: a NeuroTorch-like ``SequentialRNN`` (input, hidden and output layers, each a small
recurrent layer with its hidden state kept by the model), a TBPTT trainer that runs the
sequence in chunks of ``backward_time_steps``, backpropagates each chunk's loss, steps Adam and
then detaches the hidden states of the input layers only, and synthetic bogie vertical
acceleration sequences whose target is a smoothed track vertical irregularity.
"""
import torch
import torch.nn as nn

torch.manual_seed(134)

HPARAMS = {
    "n_sensors": 4,
    "hidden": 24,
    "seq_len": 40,
    "backward_time_steps": 10,
    "batch": 8,
    "n_batches": 3,
    "epochs": 2,
    "lr": 3e-3,
}


class RecurrentLayer(nn.Module):
    def __init__(self, n_in, n_out, name):
        super().__init__()
        self.name = name
        self.forward_weights = nn.Linear(n_in, n_out)
        self.recurrent_weights = nn.Linear(n_out, n_out, bias=False)
        self.n_out = n_out

    def init_hidden(self, batch):
        return torch.zeros(batch, self.n_out)

    def forward(self, x, hidden):
        return torch.tanh(self.forward_weights(x) + self.recurrent_weights(hidden))


class ReadoutLayer(nn.Module):
    """Leaky linear readout with its own state, as NeuroTorch's output layers have."""

    def __init__(self, n_in, n_out, name, leak=0.8):
        super().__init__()
        self.name = name
        self.linear = nn.Linear(n_in, n_out)
        self.leak = leak
        self.n_out = n_out

    def init_hidden(self, batch):
        return torch.zeros(batch, self.n_out)

    def forward(self, x, hidden):
        return self.leak * hidden + (1 - self.leak) * self.linear(x)


class SequentialRNN(nn.Module):
    def __init__(self, input_layers, hidden_layers, output_layers):
        super().__init__()
        self.input_layers = nn.ModuleList(input_layers)
        self.hidden_layers = nn.ModuleList(hidden_layers)
        self.output_layers = nn.ModuleList(output_layers)
        self.hidden_states = {}

    @property
    def all_layers(self):
        return list(self.input_layers) + list(self.hidden_layers) + list(self.output_layers)

    def reset_hidden_states(self, batch):
        self.hidden_states = {layer.name: layer.init_hidden(batch) for layer in self.all_layers}

    def step(self, x_t):
        h = x_t
        for layer in self.all_layers:
            h = layer(h, self.hidden_states[layer.name])
            self.hidden_states[layer.name] = h
        return h

    def forward(self, x_chunk):
        return torch.stack([self.step(x_chunk[:, t]) for t in range(x_chunk.shape[1])], dim=1)


class TBPTT:
    """Truncated BPTT callback: backward every ``backward_time_steps`` steps, then truncate."""

    def __init__(self, model, optimizer, criterion, backward_time_steps):
        self.model = model
        self.optimizer = optimizer
        self.criterion = criterion
        self.backward_time_steps = backward_time_steps

    def _detach_hidden_states(self):
        for layer in self.model.input_layers:
            self.model.hidden_states[layer.name] = self.model.hidden_states[layer.name].detach()

    def train_batch(self, x, y):
        self.model.reset_hidden_states(x.shape[0])
        losses = []
        for start in range(0, x.shape[1], self.backward_time_steps):
            stop = start + self.backward_time_steps
            pred = self.model(x[:, start:stop])
            batch_loss = self.criterion(pred, y[:, start:stop])
            self.optimizer.zero_grad()
            batch_loss.backward()
            self.optimizer.step()
            self._detach_hidden_states()
            losses.append(batch_loss.item())
        return sum(losses) / len(losses)


def make_runs(hp):
    """Bogie vertical accelerations over track with a smooth vertical irregularity profile."""
    n = hp["batch"] * hp["n_batches"]
    t = torch.linspace(0, 1, hp["seq_len"])
    wavelengths = 0.15 + 0.3 * torch.rand(n, 1)
    irregularity = torch.sin(2 * torch.pi * t[None] / wavelengths + 6.28 * torch.rand(n, 1))
    accel = torch.diff(irregularity, dim=1, prepend=irregularity[:, :1]) * hp["seq_len"]
    sensors = accel[..., None] * (0.5 + torch.rand(n, 1, hp["n_sensors"])) + 0.2 * torch.randn(n, hp["seq_len"], hp["n_sensors"])
    x = sensors.split(hp["batch"])
    y = irregularity[..., None].split(hp["batch"])
    return list(zip(x, y))


def main():
    hp = HPARAMS
    data = make_runs(hp)
    model = SequentialRNN(
        input_layers=[RecurrentLayer(hp["n_sensors"], hp["hidden"], "input")],
        hidden_layers=[RecurrentLayer(hp["hidden"], hp["hidden"], "hidden")],
        output_layers=[ReadoutLayer(hp["hidden"], 1, "irregularity")],
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])
    trainer = TBPTT(model, optimizer, nn.MSELoss(), hp["backward_time_steps"])
    for epoch in range(hp["epochs"]):
        for i, (x, y) in enumerate(data):
            loss = trainer.train_batch(x, y)
            print(f"epoch {epoch} batch {i} mse {loss:.4f}")


if __name__ == "__main__":
    main()
