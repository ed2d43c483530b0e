"""Few-shot classification with a growing episodic memory: each episode starts from the support set's
embeddings, answers its queries one at a time against the memory, backwards each query's loss as it goes and
writes the query's embedding into the memory; the optimizer steps once per episode."""

import torch
import torch.nn.functional as F
from torch import nn


class Embedder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 8))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


def run_episode(embedder, support, support_labels, queries, query_labels, n_way=3):
    memory = embedder(support)
    labels = support_labels
    seen = 0.0
    total = 0.0
    for q, y in zip(queries, query_labels):
        e = embedder(q.unsqueeze(0))
        sims = e @ memory.T
        logits = torch.zeros(1, n_way, dtype=sims.dtype).index_add(1, labels, sims)
        err = F.cross_entropy(logits * 5.0, y.unsqueeze(0))
        total = total + err  # one backward of the episode's sum, after its last query
        seen += err.item()
        memory = torch.cat([memory, e], dim=0)
        labels = torch.cat([labels, y.unsqueeze(0)])
    total.backward()
    return seen / len(queries)


torch.manual_seed(8)
embedder = Embedder().double()  # in float64: the sum's gradient and the sum of gradients agree to rounding
adam = torch.optim.Adam(embedder.parameters(), lr=1e-3)
for episode in range(3):
    support, support_labels = torch.randn(6, 5, dtype=torch.float64), torch.arange(3).repeat(2)
    queries, query_labels = torch.randn(4, 5, dtype=torch.float64), torch.randint(0, 3, (4,))
    adam.zero_grad()
    mean_err = run_episode(embedder, support, support_labels, queries, query_labels)
    adam.step()
