"""Stacked-GRU fuel-burn model over a haul truck's continuous shift telemetry.

Source: https://github.com/LiyuanLucasLiu/LD-Net/issues/6 ("What is
repackage_hidden?").  LD-Net trains recurrent language models with truncated
back-propagation over one long token stream: every recurrent unit
(``BasicUnit``, an LSTM or GRU) keeps ``self.hidden_state`` between batches so the next window
starts where the previous one ended, and stores it through
``utils.repackage_hidden`` (a ``detach``).  The reporter asked why the detach is
there; the author answered that it cuts the gradient of the carried hidden state,
"otherwise the backpropagation would have some error" - the second window's
backward would run into the first window's graph, already freed by its backward
("Trying to backward through the graph a second time").  The author's evident
intent is to carry the hidden *values* across windows but backpropagate only
within a window.

Reduction: the same layout - ``BasicUnit`` modules that keep their own hidden
state, a ``BasicRNN`` that stacks them in an ``nn.Sequential`` with
``init_hidden()`` at each epoch, an ``LM``-style wrapper whose output layer
returns the loss given the target, and a loop over contiguous BPTT windows - but
written the way a user writes it before learning why ``repackage_hidden``
exists: the unit stores ``new_hidden`` as it comes out of the GRU.  Setting:
a mining haul truck's shift log (payload, grade, speed, engine rpm every 10 s),
predicting the next interval's fuel burn.  Data are synthetic.
"""
import torch
import torch.nn as nn

torch.manual_seed(3)


def repackage_hidden(h):
    """Detach hidden states from their history (LD-Net's utils.repackage_hidden)."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)

HPARAMS = {
    "n_features": 4,
    "emb_dim": 16,
    "hid_dim": 24,
    "layer_num": 2,
    "droprate": 0.1,
    "batch_size": 4,    # parallel streams cut from the shift log
    "bptt": 12,
    "shift_len": 4 * 12 * 6,
    "epochs": 2,
    "lr": 2e-3,
    "clip_grad": 5.0,
}


class BasicUnit(nn.Module):
    def __init__(self, input_dim, hid_dim, droprate):
        super().__init__()
        self.layer = nn.GRU(input_dim, hid_dim, 1)  # LD-Net: rnnunit_map[unit], unit = "gru"
        self.droprate = droprate
        self.output_dim = hid_dim
        self.init_hidden()

    def init_hidden(self):
        self.hidden_state = None

    def forward(self, x):
        out, new_hidden = self.layer(x, self.hidden_state)
        self.hidden_state = repackage_hidden(new_hidden)
        if self.droprate > 0:
            out = nn.functional.dropout(out, p=self.droprate, training=self.training)
        return out


class BasicRNN(nn.Module):
    def __init__(self, layer_num, emb_dim, hid_dim, droprate):
        super().__init__()
        units = [BasicUnit(emb_dim, hid_dim, droprate)]
        units += [BasicUnit(hid_dim, hid_dim, droprate) for _ in range(layer_num - 1)]
        self.layer = nn.Sequential(*units)
        self.output_dim = units[-1].output_dim
        self.init_hidden()

    def init_hidden(self):
        for unit in self.layer.children():
            unit.init_hidden()

    def forward(self, x):
        return self.layer(x)


class FuelHead(nn.Module):
    """Plays the role of LD-Net's soft_max module: maps features to the loss."""

    def __init__(self, in_dim):
        super().__init__()
        self.out = nn.Linear(in_dim, 1)
        self.crit = nn.SmoothL1Loss()

    def forward(self, features, target):
        return self.crit(self.out(features).squeeze(-1), target)


class TelemetryLM(nn.Module):
    def __init__(self, rnn, head, n_features, emb_dim, droprate):
        super().__init__()
        self.rnn = rnn
        self.head = head
        self.feature_embed = nn.Linear(n_features, emb_dim)
        self.drop = nn.Dropout(p=droprate)

    def init_hidden(self):
        self.rnn.init_hidden()

    def forward(self, x_in, target):
        emb = self.drop(self.feature_embed(x_in))
        out = self.rnn(emb).contiguous().view(-1, self.rnn.output_dim)
        return self.head(out, target.view(-1))


def make_shift_log(hp):
    t = torch.arange(hp["shift_len"], dtype=torch.float32)
    loaded = ((t // 30) % 2)                       # haul loaded / return empty
    grade = torch.sin(t / 17.0) * 0.08
    speed = 30 - 12 * loaded + torch.randn(hp["shift_len"]) * 2
    rpm = 1500 + 300 * loaded + 800 * grade + torch.randn(hp["shift_len"]) * 40
    feats = torch.stack([loaded, grade * 10, speed / 30, rpm / 1800], dim=1)
    fuel = 0.6 + 0.9 * loaded + 4.0 * grade.clamp(min=0) + 0.05 * torch.randn(hp["shift_len"])
    return feats, fuel


def batchify(feats, fuel, bsz):
    n = feats.shape[0] // bsz
    feats = feats[: n * bsz].view(bsz, n, -1).transpose(0, 1).contiguous()  # T x B x F
    fuel = fuel[: n * bsz].view(bsz, n).t().contiguous()                   # T x B
    return feats, fuel


def train_epoch(model, optimizer, feats, fuel, hp):
    model.train()
    model.init_hidden()
    total, windows = 0.0, 0
    for i in range(0, feats.shape[0] - 1, hp["bptt"]):
        seq_len = min(hp["bptt"], feats.shape[0] - 1 - i)
        x_in = feats[i:i + seq_len]
        target = fuel[i + 1:i + 1 + seq_len]
        model.zero_grad()
        loss = model(x_in, target)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), hp["clip_grad"])
        optimizer.step()
        total += loss.item()
        windows += 1
    return total / windows


def main():
    hp = HPARAMS
    feats, fuel = batchify(*make_shift_log(hp), hp["batch_size"])
    rnn = BasicRNN(hp["layer_num"], hp["emb_dim"], hp["hid_dim"], hp["droprate"])
    model = TelemetryLM(rnn, FuelHead(rnn.output_dim), hp["n_features"], hp["emb_dim"], hp["droprate"])
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])
    for epoch in range(hp["epochs"]):
        print(f"epoch {epoch}: loss {train_epoch(model, optimizer, feats, fuel, hp):.4f}")


if __name__ == "__main__":
    main()
