"""A text classifier on bag-of-embeddings features with in-place dropout to save memory."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, vocab=50, dim=16, hidden=32, classes=3, p=0.3):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, classes)
        self.p = p

    def forward(self, tokens):
        h = torch.tanh(self.fc1(self.emb(tokens)))
        h = F.dropout(h, p=self.p, training=self.training, inplace=True)
        return self.fc2(h)


def run():
    torch.manual_seed(12)
    clf = Classifier()
    opt = torch.optim.Adagrad(clf.parameters(), lr=0.1)
    tokens = torch.randint(0, 50, (40, 7))
    labels = torch.randint(0, 3, (40,))
    clf.train()
    for epoch in range(3):
        for i in range(0, 40, 10):
            logits = clf(tokens[i : i + 10])
            loss = F.cross_entropy(logits, labels[i : i + 10])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(epoch, loss.item())


run()
