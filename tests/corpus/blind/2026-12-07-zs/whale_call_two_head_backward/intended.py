"""Whale-call detector whose head outputs a call-presence logit and call-type logits from one trunk.

Source: https://discuss.pytorch.org/t/what-exactly-does-retain-variables-true-in-loss-backward-do/3508
The thread asks why a second ``backward()`` on a graph that was already backpropagated fails
unless the first call keeps its buffers (``retain_variables``, today ``retain_graph``): the author
has two outputs computed from one shared forward and calls ``backward()`` on each in turn. The
accepted answer: the first backward frees the intermediate buffers, so the first call must keep
them (or the two losses must be summed into one backward).

Reduction: the two outputs become the presence logit and the call-type logits of one head on a
hydrophone spectrogram trunk; the trainer's step backpropagates the presence loss and the
weighted call-type loss on their own, one after the other, from a forward run once per batch.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "n_clips": 96,
    "n_mels": 32,
    "n_frames": 40,
    "n_types": 4,
    "batch_size": 16,
    "epochs": 2,
    "lr": 1e-3,
    "type_weight": 0.5,
}


def synth_hydrophone_clips(cfg, gen):
    n, m, t = cfg["n_clips"], cfg["n_mels"], cfg["n_frames"]
    spec = 0.5 * torch.randn(n, 1, m, t, generator=gen)
    has_call = torch.randint(0, 2, (n,), generator=gen)
    call_type = torch.randint(0, cfg["n_types"], (n,), generator=gen)
    for i in range(n):
        if has_call[i]:
            lo = 4 + 6 * int(call_type[i])
            spec[i, 0, lo:lo + 4, 8:32] += 2.0
    return spec, has_call.float(), call_type


class SpectrogramTrunk(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, width, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, spec):
        h = F.max_pool2d(F.relu(self.conv1(spec)), 2)
        h = F.relu(self.conv2(h))
        return self.pool(h).flatten(1)


class CallTrainer:
    def __init__(self, trunk, call_head, cfg):
        self.trunk = trunk
        self.call_head = call_head
        self.cfg = cfg
        params = list(trunk.parameters()) + list(call_head.parameters())
        self.optimizer = torch.optim.Adam(params, lr=cfg["lr"])

    def train_step(self, spec, has_call, call_type):
        self.optimizer.zero_grad()
        out = self.call_head(self.trunk(spec))
        presence_logit, type_logits = out[:, 0], out[:, 1:]
        presence_loss = F.binary_cross_entropy_with_logits(presence_logit, has_call)
        calls = has_call > 0.5
        type_logits = type_logits[calls]
        calltype_loss = F.cross_entropy(type_logits, call_type[calls])
        weighted_type_loss = self.cfg["type_weight"] * calltype_loss
        presence_loss.backward(retain_graph=True)
        weighted_type_loss.backward()
        self.optimizer.step()
        return presence_loss.item(), calltype_loss.item()


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    spec, has_call, call_type = synth_hydrophone_clips(CONFIG, gen)
    trunk = SpectrogramTrunk()
    call_head = nn.Linear(16, 1 + CONFIG["n_types"])
    trainer = CallTrainer(trunk, call_head, CONFIG)
    bs = CONFIG["batch_size"]
    for epoch in range(CONFIG["epochs"]):
        order = torch.randperm(CONFIG["n_clips"], generator=gen)
        for start in range(0, CONFIG["n_clips"], bs):
            idx = order[start:start + bs]
            p, c = trainer.train_step(spec[idx], has_call[idx], call_type[idx])
        print(f"epoch {epoch}: presence {p:.3f} call-type {c:.3f}")


if __name__ == "__main__":
    main()
