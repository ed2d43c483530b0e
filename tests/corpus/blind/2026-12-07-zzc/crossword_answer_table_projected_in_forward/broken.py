"""Crossword clue answering: rank candidate answers for a clue, answers kept inside a norm ball by hand.

Source: https://github.com/BorealisAI/advertorch/pull/38 ("change l1 projection to be not inplace").
advertorch's helper that projects a batch of tensors onto a norm ball wrote its result into its input
in place; the pull request made the projection out of place so that it can be applied to tensors
that autograd still needs.

Reduction: a crossword helper embeds a clue (bag of word ids), projects it and scores it against a
learned table of answer vectors, masking answers whose length does not fit the grid slot. To keep the
answer vectors from growing, the model projects the table back into a ball of radius max_norm inside
forward, in place and under no_grad, after the table has been used for the scores.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

CFG = {
    "vocab": 300,
    "n_answers": 120,
    "dim": 32,
    "max_norm": 1.0,
    "clue_len": 6,
    "n_clues": 256,
    "batch": 32,
    "epochs": 3,
    "lr": 0.01,
}


def make_clue_bank(cfg, gen):
    answer_len = torch.randint(3, 12, (cfg["n_answers"],), generator=gen)
    answers = torch.randint(0, cfg["n_answers"], (cfg["n_clues"],), generator=gen)
    # clues share indicative words with their answer
    key_words = torch.randint(0, cfg["vocab"], (cfg["n_answers"], 3), generator=gen)
    filler = torch.randint(0, cfg["vocab"], (cfg["n_clues"], cfg["clue_len"] - 3), generator=gen)
    clues = torch.cat([key_words[answers], filler], dim=1)
    return clues, answers, answer_len


class ClueAnswerScorer(nn.Module):
    def __init__(self, cfg, answer_len):
        super().__init__()
        self.max_norm = cfg["max_norm"]
        self.clue_emb = nn.EmbeddingBag(cfg["vocab"], cfg["dim"], mode="mean")
        self.clue_proj = nn.Linear(cfg["dim"], cfg["dim"])
        self.answer_table = nn.Parameter(0.4 * torch.randn(cfg["n_answers"], cfg["dim"]))
        self.register_buffer("answer_len", answer_len)

    def project_answers_(self):
        with torch.no_grad():
            norms = self.answer_table.norm(dim=1, keepdim=True).clamp_min(self.max_norm)
            self.answer_table.mul_(self.max_norm / norms)

    def forward(self, clue_words, slot_len):
        q = torch.tanh(self.clue_proj(self.clue_emb(clue_words)))
        scores = 8.0 * q @ self.answer_table.t()
        self.project_answers_()
        fits = self.answer_len.unsqueeze(0) == slot_len.unsqueeze(1)
        return scores.masked_fill(~fits, -1e4)


def main():
    torch.manual_seed(21)
    gen = torch.Generator().manual_seed(21)
    clues, answers, answer_len = make_clue_bank(CFG, gen)
    slot_len = answer_len[answers]

    scorer = ClueAnswerScorer(CFG, answer_len)
    opt = torch.optim.Adam(scorer.parameters(), lr=CFG["lr"])

    def train_step(idx):
        logits = scorer(clues[idx], slot_len[idx])
        clue_loss = F.cross_entropy(logits, answers[idx])
        opt.zero_grad()
        clue_loss.backward()
        opt.step()
        return clue_loss.item(), (logits.argmax(1) == answers[idx]).float().mean().item()

    for epoch in range(CFG["epochs"]):
        perm = torch.randperm(CFG["n_clues"])
        stats = [train_step(perm[i : i + CFG["batch"]]) for i in range(0, CFG["n_clues"], CFG["batch"])]
        loss = sum(s[0] for s in stats) / len(stats)
        acc = sum(s[1] for s in stats) / len(stats)
        print(f"epoch {epoch}: clue loss {loss:.3f}, answer accuracy {acc:.2%}")


if __name__ == "__main__":
    main()
