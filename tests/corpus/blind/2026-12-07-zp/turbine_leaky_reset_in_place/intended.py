"""Wind-turbine gearbox fault detection with a stateful leaky-integrator layer.

Source: https://github.com/synsense/sinabs/issues/5
In the report, the author trained a spiking network built from sinabs' stateful
layers and got "Trying to backward through the graph a second time" on the second
``loss.backward()``. The cause named there: ``StatefulLayer.reset_states`` resets the
state buffers with the in-place ``buffer.zero_()``; the buffer still carries the
autograd history of the previous forward (a zero_() on a tensor with history is
recorded too), so the next batch's forward links into the graph the previous
backward already freed. The fix in the report adds ``.detach_()`` after the reset.

Reduction: a small leaky-integrate network over windows of vibration features from
turbine gearboxes (synthetic), with the membrane potential kept as a registered
buffer on the layer, reset by ``reset_states()`` before each batch, trained with
cross-entropy on fault / healthy labels.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

CONFIG = {
    "n_channels": 6,      # accelerometer + temperature features per time step
    "window": 12,         # time steps per window
    "hidden": 24,
    "n_classes": 3,       # healthy, bearing wear, gear tooth crack
    "batch_size": 16,
    "n_batches": 8,
    "epochs": 2,
    "lr": 3e-3,
    "leak": 0.85,
}


class LeakyIntegrator(nn.Module):
    """A layer of leaky integrators with a soft firing output; keeps its potential between calls."""

    def __init__(self, n_in, n_out, leak):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)
        self.leak = leak
        self.register_buffer("v_mem", torch.zeros(1, n_out))

    def reset_states(self):
        for buf in self.buffers():
            buf.zero_().detach_()

    def forward(self, x_t):
        if self.v_mem.shape[0] != x_t.shape[0]:
            self.v_mem = torch.zeros(x_t.shape[0], self.fc.out_features)
        self.v_mem = self.leak * self.v_mem + self.fc(x_t)
        return torch.sigmoid(4.0 * (self.v_mem - 1.0))


class TurbineFaultNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layer1 = LeakyIntegrator(cfg["n_channels"], cfg["hidden"], cfg["leak"])
        self.layer2 = LeakyIntegrator(cfg["hidden"], cfg["hidden"], cfg["leak"])
        self.readout = nn.Linear(cfg["hidden"], cfg["n_classes"])

    def reset_states(self):
        for m in self.modules():
            if isinstance(m, LeakyIntegrator):
                m.reset_states()

    def forward(self, windows):
        rate = 0.0
        for t in range(windows.shape[1]):
            s1 = self.layer1(windows[:, t])
            s2 = self.layer2(s1)
            rate = rate + s2
        return self.readout(rate / windows.shape[1])


def make_scada_batches(cfg):
    batches = []
    for _ in range(cfg["n_batches"]):
        labels = torch.randint(0, cfg["n_classes"], (cfg["batch_size"],))
        base = torch.randn(cfg["batch_size"], cfg["window"], cfg["n_channels"])
        tone = torch.sin(torch.arange(cfg["window"]).float() * 0.7)[None, :, None]
        signal = base + labels[:, None, None].float() * 0.6 * tone
        batches.append((signal, labels))
    return batches


def train(model, batches, cfg):
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        running = 0.0
        for signal, labels in batches:
            model.reset_states()
            logits = model(signal)
            fault_loss = F.cross_entropy(logits, labels)
            optimizer.zero_grad()
            fault_loss.backward()
            optimizer.step()
            running += fault_loss.item()
        print(f"epoch {epoch}: loss {running / len(batches):.4f}")


if __name__ == "__main__":
    batches = make_scada_batches(CONFIG)
    model = TurbineFaultNet(CONFIG)
    train(model, batches, CONFIG)
