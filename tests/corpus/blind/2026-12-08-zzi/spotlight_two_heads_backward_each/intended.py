"""Stage-lighting cue planner: one body, two heads, two backward calls through the shared body.

Reduced from the PyTorch forum thread
https://discuss.pytorch.org/t/training-a-network-with-multiple-heads/50679
("Training a network with multiple heads").  The author trains "a network with multiple heads
branching from a common body" and backwards each head's loss separately:
``o1, o2 = model(input)``, ``l1 = loss_fn(o1, labels)``, ``l1.backward(...)``,
``l2 = loss_fn(o2, labels)``, ``l2.backward(...)``, ``optimizer.step()``, comparing it with
``torch.autograd.backward([l1, l2])``.  Both losses run back through the same body graph, so
the first ``backward()`` without ``retain_graph=True`` frees the body's saved tensors and the
second raises "Trying to backward through the graph a second time".  The evident intent is
that both heads and the shared body learn from both losses in one step; the thread's own
alternative, ``torch.autograd.backward([l1, l2])``, does exactly that in one pass.

Reduction: the body encodes per-scene features of a play's prompt book (act, beats, actor
positions, music level), head 1 classifies the lighting-cue type (blackout, fade, crossfade,
snap, follow-spot), head 2 regresses the fade time; one Adam optimizer over the model; several
epochs of mini-batches of synthetic scenes.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

HPARAMS = {"n_scenes": 256, "n_features": 20, "hidden": 64, "n_cue_types": 5,
           "batch": 32, "epochs": 3, "lr": 1e-3}


class CuePlanner(nn.Module):
    def __init__(self, n_features, hidden, n_cue_types):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(),
                                  nn.Linear(hidden, hidden), nn.ReLU())
        self.cue_head = nn.Linear(hidden, n_cue_types)
        self.fade_head = nn.Sequential(nn.Linear(hidden, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        h = self.body(x)
        return self.cue_head(h), self.fade_head(h).squeeze(-1)


def prompt_book(hp):
    x = torch.randn(hp["n_scenes"], hp["n_features"])
    cue = (x[:, :hp["n_cue_types"]] + 0.3 * torch.randn(hp["n_scenes"], hp["n_cue_types"])).argmax(1)
    fade = F.softplus(x[:, 5] - 0.5 * x[:, 6]) * 3.0  # seconds
    return x, cue, fade


def main():
    hp = HPARAMS
    x, cue, fade = prompt_book(hp)
    model = CuePlanner(hp["n_features"], hp["hidden"], hp["n_cue_types"])
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])
    for epoch in range(hp["epochs"]):
        perm = torch.randperm(hp["n_scenes"])
        for start in range(0, hp["n_scenes"], hp["batch"]):
            idx = perm[start:start + hp["batch"]]
            optimizer.zero_grad()
            o1, o2 = model(x[idx])  # outputs
            l1 = F.cross_entropy(o1, cue[idx])
            l2 = F.smooth_l1_loss(o2, fade[idx])
            torch.autograd.backward([l1, l2])
            optimizer.step()
        print(f"epoch {epoch}: cue {l1.item():.3f} fade {l2.item():.3f}")


if __name__ == "__main__":
    main()
