"""Follow recommendation on a social network: a user-pair scorer whose residual blocks
use an in-place LeakyReLU and then add the skip connection in place on its output.

Source: PyTorch forum, "Why inplace is by default set to False for nn.LeakyReLU?"
https://discuss.pytorch.org/t/why-inplace-is-by-default-set-to-false-for-nn-leakyrelu/111246

The asker sees no reason for ``nn.LeakyReLU`` to default to ``inplace=False`` (it has
no parameters, and in-place would save memory) and proposes ``inplace=True``. The
answer: in-place operations can overwrite values needed for the gradient, with an
error such as "one of the variables needed for gradient computation has been
modified by an inplace operation: [torch.FloatTensor [1024]], which is output 0 of
LeakyReluBackward1, is at version 2; expected version 1 instead"; the default
``inplace=False`` works without errors, and one may check whether ``inplace=True``
works for a given model (if PyTorch raises nothing, the gradients are right).
LeakyReluBackward1 is the in-place variant, which saves its own output for the
backward; version 2 means that output was written again afterwards.

Reduction: the asker's proposal taken at its word. A follow-recommendation scorer
embeds both users' profile features with residual MLP blocks built with
``nn.LeakyReLU(0.2, inplace=True)``; each block then adds its skip connection onto
the activation's output with ``+=``, the second in-place write that bumps the saved
output to version 2. The scorer takes the dot product of the two users' embeddings
and is trained with BCE on follow/no-follow pairs. The failure comes at the first
backward. The fix is the answer's: keep the default ``inplace=False``.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(31)

HPARAMS = {
    "n_users": 400,
    "profile_dim": 24,
    "hidden": 64,
    "n_blocks": 2,
    "pairs_per_batch": 64,
    "n_batches": 4,
    "epochs": 2,
    "lr": 1e-3,
}


class ResidualBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.act = nn.LeakyReLU(0.2)  # default inplace=False: the residual add below writes on its output

    def forward(self, x):
        h = self.act(self.lin(x))
        h += x
        return h


class UserTower(nn.Module):
    def __init__(self, profile_dim, hidden, n_blocks):
        super().__init__()
        self.inp = nn.Linear(profile_dim, hidden)
        self.blocks = nn.ModuleList([ResidualBlock(hidden) for _ in range(n_blocks)])

    def forward(self, profile):
        h = self.inp(profile)
        for block in self.blocks:
            h = block(h)
        return h


class FollowScorer(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.tower = UserTower(hp["profile_dim"], hp["hidden"], hp["n_blocks"])

    def forward(self, follower_profile, followee_profile):
        a = self.tower(follower_profile)
        b = self.tower(followee_profile)
        return (a * b).sum(-1) / a.shape[-1] ** 0.5


def make_graph(hp):
    profiles = torch.randn(hp["n_users"], hp["profile_dim"])
    communities = torch.randint(0, 5, (hp["n_users"],))
    batches = []
    for _ in range(hp["n_batches"]):
        src = torch.randint(0, hp["n_users"], (hp["pairs_per_batch"],))
        dst = torch.randint(0, hp["n_users"], (hp["pairs_per_batch"],))
        follows = (communities[src] == communities[dst]).float()
        batches.append((src, dst, follows))
    return profiles, batches


def main():
    hp = HPARAMS
    profiles, batches = make_graph(hp)
    scorer = FollowScorer(hp)
    optimizer = torch.optim.Adam(scorer.parameters(), lr=hp["lr"])
    for epoch in range(hp["epochs"]):
        for src, dst, follows in batches:
            optimizer.zero_grad()
            logits = scorer(profiles[src], profiles[dst])
            follow_loss = F.binary_cross_entropy_with_logits(logits, follows)
            follow_loss.backward()
            optimizer.step()
        print(f"epoch {epoch} follow loss {follow_loss.item():.4f}")


if __name__ == "__main__":
    main()
