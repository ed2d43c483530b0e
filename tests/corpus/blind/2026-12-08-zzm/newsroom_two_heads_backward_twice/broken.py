"""Headline triage for a newsroom: a shared headline encoder with a clickbait head
and a section head, each loss backwarded on its own.

Source: PyTorch forum, "How are optimizer.step() and loss.backward() related?"
https://discuss.pytorch.org/t/how-are-optimizer-step-and-loss-backward-related/7350/14

In that post a user with two losses computed from one forward pass asks when to
write ``(loss1 + loss2).backward()`` and when ``loss1.backward(retain_graph=True);
loss2.backward()``, and whether the two are the same (quoting a Stack Overflow answer
that calls them not equivalent under adaptive optimizers such as Adam). The second form needs
``retain_graph=True`` only because the first backward frees the buffers of the
shared part of the graph; written without it, the second backward fails with
"Trying to backward through the graph a second time". The asker's evident intent is
both losses training the shared body from the one forward, with one optimizer step
after both; the form that does this without keeping the graph alive is the summed
loss with a single backward, which is the fix used here.

Reduction: a bag-of-words headline encoder (embedding bag + tanh MLP trunk) feeds a
clickbait head and a section head, one Adam optimizer over all three. For the first
epoch only the clickbait loss is trained (a warm-up, as the newsroom had labels for
that task first); from the second epoch the section loss is added and, like the
thread's second form without the retain flag, each loss gets its own backward. The
second backward walks the trunk whose saved tensors the first one already freed.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)

HPARAMS = {
    "vocab": 300,
    "emb_dim": 32,
    "hidden": 48,
    "n_sections": 6,
    "batch_size": 16,
    "n_batches": 2,
    "headline_len": 9,
    "epochs": 3,
    "section_start_epoch": 1,
    "lr": 3e-3,
}


class HeadlineEncoder(nn.Module):
    def __init__(self, vocab, emb_dim, hidden):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, emb_dim, mode="mean")
        self.trunk = nn.Sequential(nn.Linear(emb_dim, hidden), nn.Tanh(),
                                   nn.Linear(hidden, hidden), nn.Tanh())

    def forward(self, tokens):
        return self.trunk(self.bag(tokens))


class ClickbaitHead(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.out = nn.Linear(hidden, 1)

    def forward(self, h):
        return self.out(h).squeeze(-1)


class SectionHead(nn.Module):
    def __init__(self, hidden, n_sections):
        super().__init__()
        self.out = nn.Linear(hidden, n_sections)

    def forward(self, h):
        return self.out(h)


def make_wire_feed(hp):
    batches = []
    for _ in range(hp["n_batches"]):
        tokens = torch.randint(0, hp["vocab"], (hp["batch_size"], hp["headline_len"]))
        clickbait = (tokens[:, 0] % 3 == 0).float()
        section = tokens[:, 1] % hp["n_sections"]
        batches.append((tokens, clickbait, section))
    return batches


def main():
    hp = HPARAMS
    encoder = HeadlineEncoder(hp["vocab"], hp["emb_dim"], hp["hidden"])
    clickbait_head = ClickbaitHead(hp["hidden"])
    section_head = SectionHead(hp["hidden"], hp["n_sections"])
    optimizer = torch.optim.Adam(
        list(encoder.parameters()) + list(clickbait_head.parameters())
        + list(section_head.parameters()), lr=hp["lr"])
    feed = make_wire_feed(hp)

    for epoch in range(hp["epochs"]):
        for step, (tokens, clickbait, section) in enumerate(feed):
            optimizer.zero_grad()
            h = encoder(tokens)
            clickbait_loss = F.binary_cross_entropy_with_logits(clickbait_head(h), clickbait)
            clickbait_loss.backward()
            if epoch >= hp["section_start_epoch"]:
                section_loss = F.cross_entropy(section_head(h), section)
                section_loss.backward()
            optimizer.step()
        print(f"epoch {epoch} clickbait {clickbait_loss.item():.4f}")


if __name__ == "__main__":
    main()
