"""Segment-wise training of a small Infini-attention language model with gradient accumulation.

Reduced from https://github.com/jlamprou/Infini-Attention/issues/3: the author adapted the
repository's gradient-accumulation training loop (each long sequence split into segments, one
backward per segment, one optimizer step per sequence) to their own Infini-attention model, whose
compressive memory M and normalisation term z are carried from segment to segment. Synthetic
token sequences, AdamW, CPU.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, DIM, HEADS, SEG_LEN, SEQ_LEN = 50, 32, 2, 8, 24


class InfiniAttention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, dim, bias=False)
        self.v_proj = nn.Linear(dim, dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)
        self.beta = nn.Parameter(torch.zeros(1))

    def forward(self, hidden_states, M_Z=None):
        bsz, q_len, _ = hidden_states.size()
        if M_Z is None:
            M = torch.zeros(self.num_heads, self.head_dim, self.head_dim)
            z = torch.zeros(self.num_heads, self.head_dim)
        else:
            M, z = M_Z

        q = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)

        memory_output = self._retrieve_from_memory(q, M, z)
        M, z = self._update_memory(k, v, M, z)

        attn_output = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        combined = self._long_term_injection(attn_output, memory_output)
        combined = combined.transpose(1, 2).contiguous().view(bsz, q_len, -1)
        return self.o_proj(combined), (M, z)

    def _retrieve_from_memory(self, Q, M, z):
        sigma_q = F.elu(Q) + 1
        return torch.matmul(sigma_q, M) / (torch.matmul(sigma_q, z.unsqueeze(-1)) + 1e-8)

    def _update_memory(self, K, V, M, z):
        sigma_k = F.elu(K) + 1
        updated_M = M + torch.matmul(sigma_k.transpose(-2, -1), V).mean(0)
        updated_z = z + sigma_k.sum(dim=-2).mean(0)
        return updated_M, updated_z

    def _long_term_injection(self, A_dot, A_mem):
        beta = torch.sigmoid(self.beta)
        return beta * A_mem + (1 - beta) * A_dot


class InfiniLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.attn = InfiniAttention(DIM, HEADS)
        self.norm = nn.LayerNorm(DIM)
        self.lm_head = nn.Linear(DIM, VOCAB)

    def forward(self, input_ids, labels, M_Z=None):
        h = self.embed(input_ids)
        attn_out, M_Z = self.attn(h, M_Z)
        logits = self.lm_head(self.norm(h + attn_out))
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1))
        return loss, M_Z


def main():
    torch.manual_seed(0)
    data = torch.randint(0, VOCAB, (12, SEQ_LEN + 1))
    model = InfiniLM()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

    total_loss = 0.0
    for step in range(0, data.shape[0], 4):
        batch = data[step : step + 4]
        input_ids = torch.tensor_split(batch[:, :-1], list(range(SEG_LEN, SEQ_LEN, SEG_LEN)), dim=1)
        labels = torch.tensor_split(batch[:, 1:], list(range(SEG_LEN, SEQ_LEN, SEG_LEN)), dim=1)
        M_Z = None
        for i in range(len(input_ids)):
            loss, M_Z = model(input_ids[i], labels[i], M_Z=M_Z)
            loss.backward()
            total_loss += loss.detach().float()
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {step // 4}: loss {total_loss / ((step // 4 + 1) * len(input_ids)):.4f}")


if __name__ == "__main__":
    main()
