"""Tiny mixture-of-experts language model trained with a load-balancing loss.

Reduced from https://github.com/databricks/megablocks/pull/70 (megablocks'
``LearnedRouter``): the author trains an MoE transformer block whose router
picks the top-2 experts per token from a softmax over router logits, with
``moe_normalize_expert_weights`` turned on so the two selected weights are
renormalised by their p-norm, plus jitter noise on the router input and a
Switch-style load-balancing auxiliary loss added to the language-model loss.
Here: a character-level toy corpus, 4 experts, one AdamW optimizer.
"""

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


@dataclass
class Arguments:
    hidden_size: int = 32
    ffn_hidden_size: int = 64
    moe_num_experts: int = 4
    moe_top_k: int = 2
    moe_jitter_eps: float = 0.01
    moe_normalize_expert_weights: float = 1.0
    moe_loss_weight: float = 0.1
    vocab_size: int = 27
    seq_len: int = 16


class LearnedRouter(nn.Module):
    def __init__(self, args: Arguments):
        super().__init__()
        self.args = args
        self.layer = nn.Linear(args.hidden_size, args.moe_num_experts, bias=False)
        nn.init.normal_(self.layer.weight, std=0.02)

    def jitter(self, x):
        low = 1.0 - self.args.moe_jitter_eps
        high = 1.0 + self.args.moe_jitter_eps
        noise = torch.rand(x.size(), dtype=x.dtype, device=x.device)
        return low + noise * (high - low)

    def _top_k(self, scores):
        if self.args.moe_top_k == 1:
            return scores.max(dim=-1)
        return torch.topk(scores, self.args.moe_top_k, dim=-1)

    def forward(self, x):
        if self.training and self.args.moe_jitter_eps is not None:
            x = x * self.jitter(x)

        scores = self.layer(x.view(-1, x.shape[-1])).softmax(dim=-1)
        expert_weights, expert_indices = self._top_k(scores)
        if self.args.moe_normalize_expert_weights:
            expert_weights = expert_weights / torch.norm(
                expert_weights, p=self.args.moe_normalize_expert_weights, dim=-1, keepdim=True
            )
        return scores, expert_weights, expert_indices


class Expert(nn.Module):
    def __init__(self, args: Arguments):
        super().__init__()
        self.w1 = nn.Linear(args.hidden_size, args.ffn_hidden_size)
        self.w2 = nn.Linear(args.ffn_hidden_size, args.hidden_size)

    def forward(self, x):
        return self.w2(F.gelu(self.w1(x)))


def load_balancing_loss(scores, expert_indices, num_experts, top_k):
    # Switch Transformer: num_experts * sum_e (fraction of tokens routed to e) * (mean router prob of e)
    tokens_per_expert = torch.bincount(expert_indices.flatten(), minlength=num_experts).to(scores.dtype)
    fraction = tokens_per_expert / (scores.shape[0] * top_k)
    return num_experts * torch.sum(fraction * scores.mean(dim=0))


class MoE(nn.Module):
    def __init__(self, args: Arguments):
        super().__init__()
        self.args = args
        self.router = LearnedRouter(args)
        self.experts = nn.ModuleList(Expert(args) for _ in range(args.moe_num_experts))

    def forward(self, x):
        shape = x.shape
        scores, expert_weights, expert_indices = self.router(x)
        tokens = x.reshape(-1, shape[-1])
        out = torch.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            token_idx, slot = torch.nonzero(expert_indices == e, as_tuple=True)
            if token_idx.numel() == 0:
                continue
            y = expert(tokens[token_idx]) * expert_weights[token_idx, slot].unsqueeze(-1)
            out = out.index_add(0, token_idx, y)
        aux = load_balancing_loss(scores, expert_indices, self.args.moe_num_experts, self.args.moe_top_k)
        return out.view(shape), aux


class MoELanguageModel(nn.Module):
    def __init__(self, args: Arguments):
        super().__init__()
        self.embed = nn.Embedding(args.vocab_size, args.hidden_size)
        self.pos = nn.Parameter(torch.zeros(args.seq_len, args.hidden_size))
        self.attn = nn.MultiheadAttention(args.hidden_size, num_heads=4, batch_first=True)
        self.ln1 = nn.LayerNorm(args.hidden_size)
        self.ln2 = nn.LayerNorm(args.hidden_size)
        self.moe = MoE(args)
        self.head = nn.Linear(args.hidden_size, args.vocab_size)
        mask = torch.triu(torch.ones(args.seq_len, args.seq_len, dtype=torch.bool), diagonal=1)
        self.register_buffer("causal_mask", mask)

    def forward(self, idx):
        h = self.embed(idx) + self.pos[: idx.shape[1]]
        a, _ = self.attn(self.ln1(h), self.ln1(h), self.ln1(h), attn_mask=self.causal_mask, need_weights=False)
        h = h + a
        m, aux = self.moe(self.ln2(h))
        h = h + m
        return self.head(h), aux


def get_batch(corpus, batch_size, seq_len):
    starts = torch.randint(0, corpus.numel() - seq_len - 1, (batch_size,))
    x = torch.stack([corpus[s : s + seq_len] for s in starts])
    y = torch.stack([corpus[s + 1 : s + seq_len + 1] for s in starts])
    return x, y


def main():
    args = Arguments()
    text = "the quick brown fox jumps over the lazy dog and keeps running into the woods " * 8
    corpus = torch.tensor([0 if c == " " else ord(c) - ord("a") + 1 for c in text])

    model = MoELanguageModel(args)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)

    model.train()
    for step in range(20):
        x, y = get_batch(corpus, batch_size=8, seq_len=args.seq_len)
        logits, aux = model(x)
        lm_loss = F.cross_entropy(logits.reshape(-1, args.vocab_size), y.reshape(-1))
        loss = lm_loss + args.moe_loss_weight * aux

        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

        if step % 5 == 0:
            print(f"step {step}: lm {lm_loss.item():.3f} aux {aux.item():.3f}")


if __name__ == "__main__":
    main()
