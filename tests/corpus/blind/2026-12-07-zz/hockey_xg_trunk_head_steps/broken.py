"""Ice-hockey shot quality (expected goals): one loss, two optimizers stepped in turn.

Source: https://github.com/pytorch/pytorch/issues/55368 ("Backprop second time on
spectral_norm"). The author wanted to reuse one forward for two optimizer updates ("not to
perform forward ... second time, but remember output"): ``loss.backward(retain_graph=True)``,
``opt1.step()``, then ``loss.backward()`` and ``opt2.step()``. The second backward failed with
"modified by an inplace operation": the first ``step()`` had already updated, in place, weights
that the retained graph saved. The answer was that this is expected; all backward passes through
a graph must happen before any optimizer changes the weights it used.

Reduction: an expected-goals model with a shot encoder (shot location, angle, shot type, rebound,
traffic, game state) trained by SGD and a calibration head trained by Adam. The trainer steps the
encoder's optimizer after the first backward and only then backpropagates the same loss again
for the head's optimizer.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

SETTINGS = dict(n_shots=256, n_feats=9, width=48, batch=64, epochs=3,
                lr_encoder=0.05, lr_head=2e-3, pos_rate=0.1)


def synth_shots(n, d, pos_rate):
    x = torch.randn(n, d)
    dist = x[:, 0].abs() * 8 + 5
    angle = x[:, 1].abs()
    logit = -0.12 * dist - 0.8 * angle + 0.6 * x[:, 2] + torch.logit(torch.tensor(pos_rate))
    goal = (torch.rand(n) < torch.sigmoid(logit)).float()
    return x, goal


class ShotEncoder(nn.Module):
    def __init__(self, d, width):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, width), nn.ReLU(), nn.Linear(width, width), nn.Tanh())

    def forward(self, x):
        return self.net(x)


class CalibratedHead(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.logit = nn.Linear(width, 1)
        self.log_temp = nn.Parameter(torch.zeros(1))

    def forward(self, z):
        return self.logit(z).squeeze(-1) / self.log_temp.exp()


class XGTrainer:
    def __init__(self, encoder, head, cfg):
        self.encoder, self.head = encoder, head
        self.opt_encoder = torch.optim.SGD(encoder.parameters(), lr=cfg["lr_encoder"], momentum=0.9)
        self.opt_head = torch.optim.Adam(head.parameters(), lr=cfg["lr_head"])

    def train_step(self, shots, goals):
        xg_logit = self.head(self.encoder(shots))
        xg_loss = F.binary_cross_entropy_with_logits(xg_logit, goals)

        self.opt_encoder.zero_grad()
        xg_loss.backward(retain_graph=True)
        self.opt_encoder.step()

        self.opt_head.zero_grad()
        xg_loss.backward()
        self.opt_head.step()
        return xg_loss.item()


def main():
    shots, goals = synth_shots(SETTINGS["n_shots"], SETTINGS["n_feats"], SETTINGS["pos_rate"])
    encoder = ShotEncoder(SETTINGS["n_feats"], SETTINGS["width"])
    head = CalibratedHead(SETTINGS["width"])
    trainer = XGTrainer(encoder, head, SETTINGS)
    for epoch in range(SETTINGS["epochs"]):
        perm = torch.randperm(SETTINGS["n_shots"])
        losses = []
        for i in range(0, SETTINGS["n_shots"], SETTINGS["batch"]):
            idx = perm[i:i + SETTINGS["batch"]]
            losses.append(trainer.train_step(shots[idx], goals[idx]))
        print(f"epoch {epoch} mean log-loss {sum(losses) / len(losses):.4f}")


if __name__ == "__main__":
    main()
