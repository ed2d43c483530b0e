"""Few-shot classification with modern Hopfield retrieval: an encoder turns each
support (exemplar, label) pair into a stored pattern; the query embeddings go
through a memory-saving reversible stack whose blocks retrieve from the stored
patterns (F = Hopfield layer, G = feed-forward), and a linear head reads the label.

Reduced from https://github.com/RobinBruegger/RevTorch/issues/7 ("Trying to
backward through the graph a second time ... Specify retain_graph=True"): the
reporter used RevTorch's ReversibleSequence in a Reformer encoder/decoder whose
decoder blocks attend to the encoder's output (reformer_pytorch, Jan 2020). A
reversible sequence records no graph in its forward; its backward recomputes each
block and calls ``fx2.backward(dx1)`` itself. When F reads a tensor from outside
the sequence that has a graph of its own (there the encoder keys, here the stored
patterns), the top block's inner backward frees that tensor's graph and the
next block's inner backward fails. The fix was RevTorch 0.2.4's
``eagerly_discard_variables=False``, which retains the graph on the inner
backward calls; the Reformer passes it. The training setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_WAY, N_QUERY, FEAT, DIM, DEPTH = 5, 6, 16, 32, 3
EPISODES_PER_BATCH, ITERS = 16, 40


# ---- reversible sequence (RevTorch 0.2.4) ----
class ReversibleBlock(nn.Module):
    def __init__(self, f_block, g_block):
        super().__init__()
        self.f_block, self.g_block = f_block, g_block

    def forward(self, x):
        x1, x2 = torch.chunk(x, 2, dim=-1)
        with torch.no_grad():
            y1 = x1 + self.f_block(x2)
            y2 = x2 + self.g_block(y1)
        return torch.cat([y1, y2], dim=-1)

    def backward_pass(self, y, dy, retain_graph):
        y1, y2 = torch.chunk(y, 2, dim=-1)
        dy1, dy2 = torch.chunk(dy, 2, dim=-1)
        y1.requires_grad = True
        with torch.enable_grad():
            gy1 = self.g_block(y1)
            gy1.backward(dy2, retain_graph=retain_graph)
        with torch.no_grad():
            x2 = y2 - gy1
            dx1 = dy1 + y1.grad
            y1.grad = None
        with torch.enable_grad():
            x2.requires_grad = True
            fx2 = self.f_block(x2)
            fx2.backward(dx1, retain_graph=retain_graph)
        with torch.no_grad():
            x1 = y1 - fx2
            dx2 = dy2 + x2.grad
            x2.grad = None
            return torch.cat([x1, x2.detach()], dim=-1), torch.cat([dx1, dx2], dim=-1)


class _ReversibleFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, blocks, eagerly_discard_variables):
        for block in blocks:
            x = block(x)
        ctx.y = x.detach()
        ctx.blocks = blocks
        ctx.eagerly_discard_variables = eagerly_discard_variables
        return x

    @staticmethod
    def backward(ctx, dy):
        y = ctx.y
        if ctx.eagerly_discard_variables:
            del ctx.y
        for i in range(len(ctx.blocks) - 1, -1, -1):
            y, dy = ctx.blocks[i].backward_pass(y, dy, not ctx.eagerly_discard_variables)
        if ctx.eagerly_discard_variables:
            del ctx.blocks
        return dy, None, None


class ReversibleSequence(nn.Module):
    def __init__(self, blocks, eagerly_discard_variables=True):
        super().__init__()
        self.blocks = blocks
        self.eagerly_discard_variables = eagerly_discard_variables

    def forward(self, x):
        return _ReversibleFunction.apply(x, self.blocks, self.eagerly_discard_variables)


# ---- Hopfield few-shot model ----
class HopfieldRetrieval(nn.Module):
    """State patterns (queries) retrieve from stored patterns set before the call."""

    def __init__(self, dim, beta=None):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.to_q, self.to_k, self.to_v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.beta = beta or dim ** -0.5
        self.stored = None

    def set_patterns(self, stored):
        self.stored = stored

    def forward(self, state):
        q = self.to_q(self.norm(state))
        k, v = self.to_k(self.stored), self.to_v(self.stored)
        assoc = torch.softmax(self.beta * q @ k.transpose(1, 2), dim=-1)
        return assoc @ v


class FeedForward(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        return self.net(x)


class HopfieldFewShot(nn.Module):
    def __init__(self):
        super().__init__()
        self.pattern_encoder = nn.Sequential(nn.Linear(FEAT + N_WAY, DIM), nn.GELU(), nn.Linear(DIM, DIM))
        self.query_encoder = nn.Linear(FEAT, DIM)
        self.retrievers = nn.ModuleList([HopfieldRetrieval(DIM) for _ in range(DEPTH)])
        blocks = nn.ModuleList([ReversibleBlock(self.retrievers[i], FeedForward(DIM)) for i in range(DEPTH)])
        self.layers = ReversibleSequence(blocks)
        self.head = nn.Linear(DIM, N_WAY)

    def forward(self, support, support_labels, queries):
        stored = self.pattern_encoder(torch.cat([support, F.one_hot(support_labels, N_WAY).float()], dim=-1))
        for retriever in self.retrievers:
            retriever.set_patterns(stored)
        x = self.query_encoder(queries)
        x = self.layers(torch.cat([x, x], dim=-1))
        x = torch.stack(x.chunk(2, dim=-1)).sum(dim=0)
        return self.head(x)


def sample_episodes(b):
    prototypes = torch.randn(b, N_WAY, FEAT)
    labels = torch.stack([torch.randperm(N_WAY) for _ in range(b)])
    support = prototypes + 0.1 * torch.randn(b, N_WAY, FEAT)
    which = torch.randint(0, N_WAY, (b, N_QUERY))
    queries = prototypes.gather(1, which.unsqueeze(-1).expand(-1, -1, FEAT)) + 0.3 * torch.randn(b, N_QUERY, FEAT)
    return support, labels, queries, labels.gather(1, which)


model = HopfieldFewShot()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

for it in range(ITERS):
    support, support_labels, queries, query_labels = sample_episodes(EPISODES_PER_BATCH)
    logits = model(support, support_labels, queries)
    loss = F.cross_entropy(logits.reshape(-1, N_WAY), query_labels.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if it % 10 == 0:
        acc = (logits.argmax(-1) == query_labels).float().mean().item()
        print(f"iter {it:3d}  loss {loss.item():.4f}  acc {acc:.2f}")
