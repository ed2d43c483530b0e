"""Word-ladder generation: predict which letter to change and what to change it to.

Source: https://github.com/pytorch/pytorch/issues/7329 ("pytorch 0.4. RuntimeError: one of the
variables needed for gradient computation has been modified by an inplace operation"). The
author's MobileNet-V2 training ran on PyTorch 0.3 and failed on 0.4 at ``backward()``; the
maintainers answered to make the dropout or the ReLU6 out-of-place, since an ``inplace=True``
activation at that place overwrites a tensor another layer saved for its backward.

The script reduces this to a word-ladder generator (CAT -> COT -> DOT -> DOG): a character
encoder embeds the current word and the target word; a position head picks the letter slot
to change; the encoder features then go through an in-place dropout before the letter head,
which picks the new letter conditioned on the chosen slot. The position head has already saved
those features for its weight gradient when the dropout overwrites them. One optimizer trains
the whole network on the sum of the position and letter losses.
"""

import random

import torch
import torch.nn as nn
import torch.nn.functional as F

WORD_LEN = 4
ALPHABET = "abcdefghijklmnopqrstuvwxyz"
SETUP = {"seed": 3, "emb": 16, "hidden": 48, "pairs": 96, "batch": 24, "epochs": 3, "lr": 3e-3, "drop": 0.2}


def make_pairs(n, rng):
    """(word, target, slot, letter): the ladder step that moves word one letter towards target."""
    pairs = []
    for _ in range(n):
        word = [rng.randrange(26) for _ in range(WORD_LEN)]
        target = list(word)
        diff = rng.sample(range(WORD_LEN), rng.randint(1, WORD_LEN))
        for pos in diff:
            target[pos] = (word[pos] + rng.randint(1, 25)) % 26
        slot = min(diff)
        pairs.append((word, target, slot, target[slot]))
    return pairs


def to_tensors(pairs):
    words = torch.tensor([p[0] for p in pairs])
    targets = torch.tensor([p[1] for p in pairs])
    slots = torch.tensor([p[2] for p in pairs])
    letters = torch.tensor([p[3] for p in pairs])
    return words, targets, slots, letters


class LadderNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(len(ALPHABET), cfg["emb"])
        self.encoder = nn.Sequential(nn.Linear(2 * WORD_LEN * cfg["emb"], cfg["hidden"]), nn.Tanh())
        self.position_head = nn.Linear(cfg["hidden"], WORD_LEN)
        self.drop = nn.Dropout(cfg["drop"])
        self.letter_head = nn.Linear(cfg["hidden"] + WORD_LEN, len(ALPHABET))

    def forward(self, words, targets, slots):
        b = words.size(0)
        x = torch.cat([self.embed(words).view(b, -1), self.embed(targets).view(b, -1)], dim=-1)
        feat = self.encoder(x)
        position_logits = self.position_head(feat)
        feat = self.drop(feat)
        slot_onehot = F.one_hot(slots, WORD_LEN).float()
        letter_logits = self.letter_head(torch.cat([feat, slot_onehot], dim=-1))
        return position_logits, letter_logits


def train(cfg):
    torch.manual_seed(cfg["seed"])
    rng = random.Random(cfg["seed"])
    words, targets, slots, letters = to_tensors(make_pairs(cfg["pairs"], rng))
    ladder_net = LadderNet(cfg)
    opt = torch.optim.Adam(ladder_net.parameters(), lr=cfg["lr"])

    for epoch in range(cfg["epochs"]):
        ladder_net.train()
        perm = torch.randperm(cfg["pairs"])
        correct = 0
        for start in range(0, cfg["pairs"], cfg["batch"]):
            idx = perm[start : start + cfg["batch"]]
            position_logits, letter_logits = ladder_net(words[idx], targets[idx], slots[idx])
            position_loss = F.cross_entropy(position_logits, slots[idx])
            letter_loss = F.cross_entropy(letter_logits, letters[idx])
            opt.zero_grad()
            (position_loss + letter_loss).backward()
            opt.step()
            correct += (letter_logits.argmax(-1) == letters[idx]).sum().item()
        print(f"epoch {epoch}: letter accuracy {correct / cfg['pairs']:.3f}")


if __name__ == "__main__":
    train(SETUP)
