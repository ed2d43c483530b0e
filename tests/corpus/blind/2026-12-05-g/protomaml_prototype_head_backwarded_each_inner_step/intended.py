"""Reduced from https://github.com/facebookresearch/higher/pull/57 (and issue #70 of the same repository)

The author implemented first-order ProtoMAML (Triantafillou et al.) on top of BERT for few-shot
sequence labelling: for each episode the support set is encoded, class prototypes are averaged,
and the task's output layer is initialised from them (weight 2 * prototype, bias minus the squared
norm of the prototype); the encoder is then adapted for a few inner steps on the support set and
the query loss updates the meta-parameters. The inner loop failed at its second step with "Trying
to backward through the graph a second time", which retain_graph made go away. The maintainer
answered that the first-order version needs no differentiable optimizer at all, and the author's
own implementation (MetaWSD, models/seq_meta.py) initialises the inner loop's output layer from the
prototypes detached (init_weights.detach().requires_grad_()), adapts it with the encoder, and sends
the query loss's gradient into the prototypes through
init_weights + (output_weight - init_weights).detach().

Here plain PyTorch (a deepcopy of the learner per task, as the maintainer suggested) with a small
bag-of-words encoder in place of BERT.
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, DIM, N_WAY, K_SHOT, N_QUERY, SEQ = 100, 32, 3, 4, 4, 10


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.EmbeddingBag(VOCAB, DIM, mode="mean")
        self.linear = nn.Linear(DIM, DIM)

    def forward(self, tokens):
        return torch.tanh(self.linear(self.embed(tokens)))


class ProtoMAML:
    def __init__(self, inner_lr=0.1, meta_lr=1e-3, updates=3):
        self.learner = Encoder()
        self.inner_lr = inner_lr
        self.updates = updates
        self.meta_optimizer = torch.optim.Adam(self.learner.parameters(), lr=meta_lr)

    @staticmethod
    def build_prototypes(reps, labels):
        return torch.stack([reps[labels == c].mean(0) for c in range(N_WAY)])

    def adapt_and_evaluate(self, episode):
        x_s, y_s, x_q, y_q = episode
        fast_learner = copy.deepcopy(self.learner)

        prototypes = self.build_prototypes(self.learner(x_s), y_s)
        init_weights = 2 * prototypes
        init_bias = -prototypes.norm(dim=1) ** 2
        output_weight = init_weights.detach().requires_grad_()
        output_bias = init_bias.detach().requires_grad_()
        inner_optimizer = torch.optim.SGD(
            list(fast_learner.parameters()) + [output_weight, output_bias], lr=self.inner_lr
        )

        for _ in range(self.updates):
            logits = F.linear(fast_learner(x_s), output_weight, output_bias)
            support_loss = F.cross_entropy(logits, y_s)
            inner_optimizer.zero_grad()
            support_loss.backward()
            inner_optimizer.step()

        output_weight = init_weights + (output_weight - init_weights).detach()
        output_bias = init_bias + (output_bias - init_bias).detach()
        query_logits = F.linear(fast_learner(x_q), output_weight, output_bias)
        query_loss = F.cross_entropy(query_logits, y_q)
        inner_optimizer.zero_grad()
        query_loss.backward()
        for p, fp in zip(self.learner.parameters(), fast_learner.parameters()):
            p.grad = fp.grad.clone() if p.grad is None else p.grad + fp.grad
        return query_loss.item()

    def training(self, episode_batches):
        for it, batch in enumerate(episode_batches):
            self.meta_optimizer.zero_grad()
            losses = [self.adapt_and_evaluate(episode) for episode in batch]
            self.meta_optimizer.step()
            print(f"meta iteration {it}: query loss {sum(losses) / len(losses):.4f}")


def make_episode():
    topics = torch.randint(0, VOCAB - 20, (N_WAY,))
    def sample(n):
        y = torch.arange(N_WAY).repeat_interleave(n)
        x = (topics[y, None] + torch.randint(0, 20, (len(y), SEQ))) % VOCAB
        return x, y
    x_s, y_s = sample(K_SHOT)
    x_q, y_q = sample(N_QUERY)
    return x_s, y_s, x_q, y_q


episode_batches = [[make_episode() for _ in range(2)] for _ in range(4)]

meta_learner = ProtoMAML()
meta_learner.training(episode_batches)
