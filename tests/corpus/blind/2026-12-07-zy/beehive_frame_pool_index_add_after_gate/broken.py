"""Beekeeping hive health: frame-sensor embeddings pooled per hive with index_add_, queen-excluder frames added later.

Reduced from openforcefield/smee pull request #127, "Fix force loss when
v-sites are present" (https://github.com/openforcefield/smee/pull/127): a loss
on forces failed with a "tensor modified in-place" error when the system had
virtual sites, because the virtual sites' contributions were folded back onto
their parent atoms in place, into a per-particle tensor that autograd had
already saved for an earlier operation. The PR makes that step out of place.

The writer's setting: each brood frame of a hive carries a sensor pod
(temperature, humidity, weight, sound level); frame embeddings are pooled per
hive with ``index_add_`` into a buffer, a gate reads the pooled buffer, and the
readings of the super frames above the queen excluder, which belong to the
same hive, are folded into the buffer afterwards. A head classifies the hive's
health (healthy / queenless / varroa / swarming) (the report is a molecular
force field, the training setting is the writer's).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

N_HIVES, N_BROOD, N_SUPER, N_SENS, D, N_STATES = 12, 60, 24, 4, 16, 4


class HiveHealth(nn.Module):
    def __init__(self):
        super().__init__()
        self.frame_enc = nn.Sequential(nn.Linear(N_SENS, D), nn.Tanh())
        self.super_enc = nn.Linear(N_SENS, D)
        self.gate = nn.Linear(D, D)
        self.head = nn.Linear(D, N_STATES)

    def pool(self, brood, brood_hive, supers, super_hive):
        hive = torch.zeros(N_HIVES, D)
        hive.index_add_(0, brood_hive, self.frame_enc(brood))
        g = torch.sigmoid(self.gate(hive))
        hive.index_add_(0, super_hive, 0.5 * self.super_enc(supers))
        return g * hive

    def forward(self, brood, brood_hive, supers, super_hive):
        return self.head(self.pool(brood, brood_hive, supers, super_hive))


def inspection_round():
    brood_hive = torch.arange(N_BROOD) % N_HIVES
    super_hive = torch.arange(N_SUPER) % N_HIVES
    state = torch.randint(0, N_STATES, (N_HIVES,))
    brood = torch.randn(N_BROOD, N_SENS) + 0.6 * state[brood_hive, None].float()
    supers = torch.randn(N_SUPER, N_SENS) - 0.3 * state[super_hive, None].float()
    return brood, brood_hive, supers, super_hive, state


class Trainer:
    def __init__(self, model, lr=5e-3):
        self.model = model
        self.optim = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)

    def step(self, batch):
        *inputs, state = batch
        logits = self.model(*inputs)
        health_loss = F.cross_entropy(logits, state)
        self.optim.zero_grad()
        health_loss.backward()
        self.optim.step()
        return health_loss.item()


if __name__ == "__main__":
    hive_model = HiveHealth()
    trainer = Trainer(hive_model)
    for rnd in range(5):
        print(f"round {rnd}: {trainer.step(inspection_round()):.4f}")
