"""Churn and customer-lifetime prediction from sequential purchase histories.

Source: https://github.com/qianyu-dlut/MVANet/issues/2 -- "Training error : Relu
variables has been modified by an inplace operation". MVANet's constructor ends with
a sweep that turns every ``nn.ReLU`` and ``nn.Dropout`` into its in-place form
(``for m in self.modules(): if isinstance(m, nn.ReLU) or isinstance(m, nn.Dropout):
m.inplace = True``), and its transformer blocks' feed-forward is
``self.linear2(self.dropout(self.activation(self.linear1(x))))``: the in-place
dropout overwrites the ReLU output that ReLU's backward needs. The maintainers fixed
it with ``self.activation(self.linear1(x)).clone()``.

The report is dichotomous image segmentation; the training setting (a small
transformer encoder over a customer's purchase events with a churn head and a
lifetime-value head, the same memory-saving sweep in the constructor) is the
writer's. The mechanism is the report's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_CATEGORIES = 30
SEQ = 16
BATCH = 16
DIM = 32


class EncoderLayer(nn.Module):
    def __init__(self, dim, heads=4, ffn=64, dropout=0.1):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.dropout1 = nn.Dropout(dropout)
        self.norm1 = nn.LayerNorm(dim)
        self.linear1 = nn.Linear(dim, ffn)
        self.activation = nn.ReLU()
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(ffn, dim)
        self.dropout2 = nn.Dropout(dropout)
        self.norm2 = nn.LayerNorm(dim)

    def forward(self, x, pad_mask):
        a = self.attn(x, x, x, key_padding_mask=pad_mask, need_weights=False)[0]
        x = self.norm1(x + self.dropout1(a))
        x = x + self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))
        return self.norm2(x)


class PurchaseHistoryModel(nn.Module):
    def __init__(self, dim=DIM, layers=2):
        super().__init__()
        self.category = nn.Embedding(N_CATEGORIES + 1, dim, padding_idx=0)
        self.amount = nn.Linear(1, dim)
        self.gap = nn.Linear(1, dim)
        self.layers = nn.ModuleList([EncoderLayer(dim) for _ in range(layers)])
        self.churn_head = nn.Linear(dim, 1)
        self.clv_head = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, 1))

        # save activation memory: every ReLU and Dropout works in place
        for m in self.modules():
            if isinstance(m, nn.ReLU) or isinstance(m, nn.Dropout):
                m.inplace = True

    def forward(self, cats, amounts, gaps, pad_mask):
        x = self.category(cats) + self.amount(amounts.unsqueeze(-1)) + self.gap(gaps.unsqueeze(-1))
        for layer in self.layers:
            x = layer(x, pad_mask)
        keep = (~pad_mask).unsqueeze(-1).float()
        pooled = (x * keep).sum(1) / keep.sum(1)
        return self.churn_head(pooled).squeeze(-1), self.clv_head(pooled).squeeze(-1)


def make_batch():
    lengths = torch.randint(4, SEQ + 1, (BATCH,))
    pad_mask = torch.arange(SEQ).unsqueeze(0) >= lengths.unsqueeze(1)
    cats = torch.randint(1, N_CATEGORIES + 1, (BATCH, SEQ)).masked_fill(pad_mask, 0)
    amounts = torch.rand(BATCH, SEQ).masked_fill(pad_mask, 0.0)
    gaps = torch.rand(BATCH, SEQ).masked_fill(pad_mask, 0.0)
    recency = gaps.gather(1, (lengths - 1).unsqueeze(1)).squeeze(1)
    churned = (recency + 0.1 * torch.randn(BATCH) > 0.5).float()
    future_value = amounts.sum(1) * (1 - churned)
    return cats, amounts, gaps, pad_mask, churned, future_value


model = PurchaseHistoryModel()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)

model.train()
for step in range(4):
    cats, amounts, gaps, pad_mask, churned, future_value = make_batch()
    churn_logit, clv = model(cats, amounts, gaps, pad_mask)
    churn_loss = F.binary_cross_entropy_with_logits(churn_logit, churned)
    clv_loss = F.mse_loss(clv, future_value)
    loss = churn_loss + 0.5 * clv_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} churn {churn_loss.item():.3f} clv {clv_loss.item():.3f}")
