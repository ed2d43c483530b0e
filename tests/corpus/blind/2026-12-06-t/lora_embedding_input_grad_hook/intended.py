"""LoRA fine-tuning of a frozen tiny language model, adapters on the token embedding and on attention.

Source: https://github.com/huggingface/peft/pull/1372 (the same error on LoRA embeddings is reported in
https://github.com/huggingface/peft/issues/1553). The author was fine-tuning a causal LM with LoRA
adapters on the embedding layer, with gradient checkpointing prepared the usual way: a forward hook
on the input embeddings calls ``output.requires_grad_(True)`` so that checkpointed blocks receive an
input that requires grad although every base weight is frozen. The LoRA embedding's forward then did
``result += (after_A @ embedding_B) * scaling`` on the base layer's output, which that hook had made a
leaf requiring grad: "a leaf Variable that requires grad is being used in an in-place operation".
The PR replaces the ``+=`` by ``result = result + ...``.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, DIM, HEADS, SEQ, BATCH, RANK = 64, 32, 4, 12, 8, 4


class LoraEmbedding(nn.Module):
    def __init__(self, base: nn.Embedding, r: int, alpha: float):
        super().__init__()
        self.base_layer = base
        self.lora_embedding_A = nn.Parameter(torch.zeros(r, base.num_embeddings))
        self.lora_embedding_B = nn.Parameter(torch.randn(base.embedding_dim, r) * 0.02)
        nn.init.normal_(self.lora_embedding_A, std=0.02)
        self.scaling = alpha / r

    def forward(self, ids):
        result = self.base_layer(ids)
        after_A = F.embedding(ids, self.lora_embedding_A.T)
        result = result + (after_A @ self.lora_embedding_B.T) * self.scaling
        return result


class LoraLinear(nn.Module):
    def __init__(self, base: nn.Linear, r: int, alpha: float):
        super().__init__()
        self.base_layer = base
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.normal_(self.lora_B.weight, std=0.02)
        self.scaling = alpha / r

    def forward(self, x):
        return self.base_layer(x) + self.lora_B(self.lora_A(x)) * self.scaling


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(DIM)
        self.q_proj = nn.Linear(DIM, DIM)
        self.k_proj = nn.Linear(DIM, DIM)
        self.v_proj = nn.Linear(DIM, DIM)
        self.o_proj = nn.Linear(DIM, DIM)
        self.ln2 = nn.LayerNorm(DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x):
        b, t, _ = x.shape
        h = self.ln1(x)
        q = self.q_proj(h).view(b, t, HEADS, -1).transpose(1, 2)
        k = self.k_proj(h).view(b, t, HEADS, -1).transpose(1, 2)
        v = self.v_proj(h).view(b, t, HEADS, -1).transpose(1, 2)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(att.transpose(1, 2).reshape(b, t, DIM))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList([Block() for _ in range(2)])
        self.norm = nn.LayerNorm(DIM)
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False)

    def get_input_embeddings(self):
        return self.embed_tokens

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for block in self.blocks:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=True)
        return self.lm_head(self.norm(x))


def enable_input_require_grads(model):
    def make_inputs_require_grads(module, inputs, output):
        output.requires_grad_(True)

    model.get_input_embeddings().register_forward_hook(make_inputs_require_grads)


def inject_lora(model, r=RANK, alpha=8.0):
    for p in model.parameters():
        p.requires_grad_(False)
    model.embed_tokens = LoraEmbedding(model.embed_tokens, r, alpha)
    for block in model.blocks:
        block.q_proj = LoraLinear(block.q_proj, r, alpha)
        block.v_proj = LoraLinear(block.v_proj, r, alpha)
    return model


model = TinyLM()
# prepare for k-bit / checkpointed training: hook the base embedding before it is wrapped
enable_input_require_grads(model)
model = inject_lora(model)
trainable = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.AdamW(trainable, lr=1e-3)

data = torch.randint(0, VOCAB, (64, SEQ + 1))

model.train()
for step in range(20):
    batch = data[torch.randint(0, data.size(0), (BATCH,))]
    inputs, targets = batch[:, :-1], batch[:, 1:]
    logits = model(inputs)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step} loss {loss.item():.4f}")
