"""Reduced from https://github.com/lm-sys/FastChat/issues/581 (fixed by https://github.com/lm-sys/FastChat/pull/1489)

The author fine-tuned a LLaMA model with LoRA (FastChat's train_lora.py) with gradient checkpointing
turned on to save memory. The base model is frozen (embeddings, blocks, norm, lm_head), only the
LoRA adapters inside the attention projections train, and the decoder layers run under
torch.utils.checkpoint with the reentrant implementation. The first backward fails with
"element 0 of tensors does not require grad and does not have a grad_fn". The thread found that the
hidden states entering the checkpointed layers do not require grad (they come from the frozen
embedding), so the reentrant checkpoint returns outputs without a graph; the fix merged in the PR
calls model.enable_input_require_grads(), a forward hook on the input embedding that marks its
output as requiring grad.

Here a tiny causal LM in the LLaMA layout with hand-written LoRA linears and a Trainer-like loop.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)

VOCAB, DIM, HEADS, LAYERS, SEQ = 64, 32, 4, 2, 12


class LoraLinear(nn.Module):
    def __init__(self, in_f, out_f, r=4, alpha=8):
        super().__init__()
        self.base = nn.Linear(in_f, out_f, bias=False)
        self.lora_A = nn.Linear(in_f, r, bias=False)
        self.lora_B = nn.Linear(r, out_f, bias=False)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm(DIM)
        self.q_proj = LoraLinear(DIM, DIM)
        self.k_proj = nn.Linear(DIM, DIM, bias=False)
        self.v_proj = LoraLinear(DIM, DIM)
        self.o_proj = nn.Linear(DIM, DIM, bias=False)
        self.post_attention_layernorm = RMSNorm(DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.SiLU(), nn.Linear(4 * DIM, DIM))

    def forward(self, h):
        b, t, _ = h.shape
        x = self.input_layernorm(h)
        q = self.q_proj(x).view(b, t, HEADS, -1).transpose(1, 2)
        k = self.k_proj(x).view(b, t, HEADS, -1).transpose(1, 2)
        v = self.v_proj(x).view(b, t, HEADS, -1).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        h = h + self.o_proj((att @ v).transpose(1, 2).reshape(b, t, -1))
        return h + self.mlp(self.post_attention_layernorm(h))


class TinyLlama(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList([DecoderLayer() for _ in range(LAYERS)])
        self.norm = RMSNorm(DIM)
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False)
        self.gradient_checkpointing = False

    def gradient_checkpointing_enable(self):
        self.gradient_checkpointing = True

    def forward(self, input_ids, labels):
        h = self.embed_tokens(input_ids)
        for layer in self.layers:
            use_ckpt = self.gradient_checkpointing and self.training
            h = checkpoint(layer, h, use_reentrant=True) if use_ckpt else layer(h)
        logits = self.lm_head(self.norm(h))
        return F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), labels[:, 1:].reshape(-1))


def mark_only_lora_as_trainable(model):
    for name, p in model.named_parameters():
        p.requires_grad = "lora_" in name


class Trainer:
    def __init__(self, model, optimizer, batches):
        self.model = model
        self.optimizer = optimizer
        self.batches = batches

    def train(self, epochs):
        self.model.train()
        for epoch in range(epochs):
            for step, input_ids in enumerate(self.batches):
                loss = self.model(input_ids, labels=input_ids)
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")


def enable_input_require_grads(model):
    def make_inputs_require_grads(module, input, output):
        output.requires_grad_(True)

    model.embed_tokens.register_forward_hook(make_inputs_require_grads)


model = TinyLlama()
mark_only_lora_as_trainable(model)
model.gradient_checkpointing_enable()
enable_input_require_grads(model)

optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)

data = torch.randint(0, VOCAB, (32, SEQ))
batches = list(data.split(8))

trainer = Trainer(model, optimizer, batches)
trainer.train(epochs=2)
