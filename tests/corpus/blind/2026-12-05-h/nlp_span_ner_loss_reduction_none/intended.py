"""Chinese NER with a span model (DeepNER, TianChi medical NER): a BERT-style encoder, a
mid linear layer, start and end classifiers over the entity types, the loss on the
non-padding tokens only.

Reduced from https://github.com/z814081807/DeepNER/issues/19 (src/utils/model_utils.py
`SpanModel`, src/utils/trainer.py `train`): a two-layer Transformer encoder stands in for
the pretrained BERT; AdamW with a linear warmup schedule; synthetic token ids, attention
masks and start/end labels.
"""

import torch
import torch.nn as nn

torch.manual_seed(123)

VOCAB, HIDDEN, NUM_TAGS, MAX_LEN, BATCH = 100, 32, 5, 16, 4


class TinyBert(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, HIDDEN)
        self.token_type_embeddings = nn.Embedding(2, HIDDEN)
        self.position_embeddings = nn.Embedding(MAX_LEN, HIDDEN)
        layer = nn.TransformerEncoderLayer(HIDDEN, 4, 64, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, input_ids, attention_mask, token_type_ids):
        pos = torch.arange(input_ids.shape[1])
        h = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids) + self.position_embeddings(pos)
        return (self.encoder(h, src_key_padding_mask=attention_mask == 0),)


class BaseModel(nn.Module):
    def __init__(self, dropout_prob):
        super().__init__()
        self.bert_module = TinyBert()
        self.dropout_prob = dropout_prob

    @staticmethod
    def _init_weights(blocks, initializer_range=0.02):
        for block in blocks:
            for module in block.modules():
                if isinstance(module, nn.Linear):
                    nn.init.normal_(module.weight, std=initializer_range)
                    nn.init.zeros_(module.bias)


class SpanModel(BaseModel):
    def __init__(self, num_tags, dropout_prob=0.1, loss_type="ce", mid_linear_dims=16):
        super().__init__(dropout_prob=dropout_prob)
        self.num_tags = num_tags
        self.mid_linear = nn.Sequential(nn.Linear(HIDDEN, mid_linear_dims), nn.ReLU(), nn.Dropout(dropout_prob))
        self.start_fc = nn.Linear(mid_linear_dims, num_tags)
        self.end_fc = nn.Linear(mid_linear_dims, num_tags)

        reduction = "mean"
        if loss_type == "ce":
            self.criterion = nn.CrossEntropyLoss(reduction=reduction)
        else:
            raise ValueError(loss_type)

        self._init_weights([self.mid_linear, self.start_fc, self.end_fc])

    def forward(self, token_ids, attention_masks, token_type_ids, start_ids=None, end_ids=None):
        seq_out = self.bert_module(token_ids, attention_masks, token_type_ids)[0]
        seq_out = self.mid_linear(seq_out)
        start_logits = self.start_fc(seq_out)
        end_logits = self.end_fc(seq_out)
        out = (start_logits, end_logits)

        if start_ids is not None and end_ids is not None and self.training:
            start_logits = start_logits.view(-1, self.num_tags)
            end_logits = end_logits.view(-1, self.num_tags)

            # drop the padding positions, compute the loss on the real tokens
            active_loss = attention_masks.view(-1) == 1
            active_start_logits = start_logits[active_loss]
            active_end_logits = end_logits[active_loss]
            active_start_labels = start_ids.view(-1)[active_loss]
            active_end_labels = end_ids.view(-1)[active_loss]

            start_loss = self.criterion(active_start_logits, active_start_labels)
            end_loss = self.criterion(active_end_logits, active_end_labels)
            loss = start_loss + end_loss
            out = (loss,) + out
        return out


def make_batches(n):
    batches = []
    for _ in range(n):
        lengths = torch.randint(8, MAX_LEN + 1, (BATCH,))
        masks = (torch.arange(MAX_LEN)[None, :] < lengths[:, None]).long()
        batches.append(
            {
                "token_ids": torch.randint(1, VOCAB, (BATCH, MAX_LEN)) * masks,
                "attention_masks": masks,
                "token_type_ids": torch.zeros(BATCH, MAX_LEN, dtype=torch.long),
                "start_ids": torch.randint(0, NUM_TAGS, (BATCH, MAX_LEN)) * masks,
                "end_ids": torch.randint(0, NUM_TAGS, (BATCH, MAX_LEN)) * masks,
            }
        )
    return batches


def train(model, train_loader, epochs=2, lr=2e-4, warmup_steps=2):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    t_total = epochs * len(train_loader)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warmup_steps, max(0.0, (t_total - step) / (t_total - warmup_steps)))
    )
    global_step = 0
    for epoch in range(epochs):
        for batch_data in train_loader:
            model.train()
            loss = model(**batch_data)[0]
            model.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            global_step += 1
            print(f"step {global_step}: loss {loss.item():.4f}")


model = SpanModel(num_tags=NUM_TAGS)
train(model, make_batches(4))
