"""Reduced from https://github.com/seanie12/SWEP/issues/3 (again as https://github.com/seanie12/SWEP/issues/6)

SWEP ("Learning to Perturb Word Embeddings for Out-of-distribution QA") fine-tunes a BERT
extractive-QA model with a learned multiplicative noise on the word embeddings: a noise network
reads the (no_grad) encoder's hidden states, samples a Gaussian noise, and the QA model is run
twice per batch, once on the noisy embeddings and once on the clean ones, both times with the
same start_positions / end_positions tensors; the loss is the mean of the two span losses plus a
KL term. Training with a newer transformers raised, at loss.backward(), "one of the variables
needed for gradient computation has been modified by an inplace operation: [torch.LongTensor [8]]
is at version 3; expected version 2". The maintainer: "the error is due to in-place operation in
transformers" (BertForQuestionAnswering clamps the gold positions in place before its
CrossEntropyLoss, which saves them).

Here a small BERT-like QA model written as transformers writes its QA head, the same wrapper,
and the script's training loop with AdamW and a linear warm-up schedule, on synthetic token ids.
"""
from math import sqrt

import torch
import torch.nn as nn
from torch.nn import CrossEntropyLoss

torch.manual_seed(0)

VOCAB, HIDDEN, SEQ, BATCH = 100, 32, 24, 8


class TinyBert(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, HIDDEN)
        self.position_embeddings = nn.Embedding(SEQ, HIDDEN)
        self.layer_norm = nn.LayerNorm(HIDDEN)
        layer = nn.TransformerEncoderLayer(HIDDEN, 4, 64, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)

    def get_input_embeddings(self):
        return self.word_embeddings

    def forward(self, input_ids=None, attention_mask=None, inputs_embeds=None):
        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)
        positions = torch.arange(inputs_embeds.size(1))
        h = self.layer_norm(inputs_embeds + self.position_embeddings(positions))
        return (self.encoder(h, src_key_padding_mask=attention_mask == 0),)


class BertForQuestionAnswering(nn.Module):
    def __init__(self):
        super().__init__()
        self.bert = TinyBert()
        self.qa_outputs = nn.Linear(HIDDEN, 2)

    def get_input_embeddings(self):
        return self.bert.get_input_embeddings()

    def forward(self, input_ids=None, attention_mask=None, inputs_embeds=None,
                start_positions=None, end_positions=None):
        sequence_output = self.bert(input_ids, attention_mask, inputs_embeds)[0]
        logits = self.qa_outputs(sequence_output)
        start_logits, end_logits = logits.split(1, dim=-1)
        start_logits = start_logits.squeeze(-1)
        end_logits = end_logits.squeeze(-1)

        total_loss = None
        if start_positions is not None and end_positions is not None:
            # sometimes the start/end positions are outside our model inputs, we ignore these terms
            ignored_index = start_logits.size(1)
            start_positions.clamp_(0, ignored_index)
            end_positions.clamp_(0, ignored_index)

            loss_fct = CrossEntropyLoss(ignore_index=ignored_index)
            start_loss = loss_fct(start_logits, start_positions)
            end_loss = loss_fct(end_logits, end_positions)
            total_loss = (start_loss + end_loss) / 2
        return (total_loss, start_logits, end_logits)


class GaussianKLLoss(nn.Module):
    def forward(self, mu1, logvar1, mu2, logvar2):
        numerator = logvar1.exp() + torch.pow(mu1 - mu2, 2)
        fraction = torch.div(numerator, logvar2.exp())
        kl = 0.5 * torch.sum(logvar2 - logvar1 + fraction - 1, dim=1)
        return kl.mean(dim=0)


class VariationalBert(nn.Module):
    def __init__(self, dropout=0.1):
        super().__init__()
        self.bert_model = BertForQuestionAnswering()
        self.noise_net = nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                                       nn.Linear(HIDDEN, HIDDEN * 2))
        self.dropout = dropout

    def forward(self, input_ids, attention_mask, start_positions=None, end_positions=None):
        embeddings = self.bert_model.get_input_embeddings()
        encoder = self.bert_model.bert
        with torch.no_grad():
            hiddens = encoder(input_ids=input_ids, attention_mask=attention_mask)[0]

        indices = attention_mask.view(-1) == 1
        mu, log_var = torch.chunk(self.noise_net(hiddens), 2, dim=-1)
        noise = mu + torch.randn_like(mu) * torch.exp(0.5 * log_var)

        prior_mu = torch.ones_like(mu)
        prior_logvar = torch.log(torch.ones_like(mu) * sqrt(self.dropout / (1 - self.dropout)))
        h = hiddens.size(-1)
        kl = GaussianKLLoss()(mu.view(-1, h)[indices], log_var.view(-1, h)[indices],
                              prior_mu.view(-1, h)[indices], prior_logvar.view(-1, h)[indices])

        inputs_embeds = embeddings(input_ids)
        noise_outputs = self.bert_model(inputs_embeds=inputs_embeds * noise,
                                        attention_mask=attention_mask,
                                        start_positions=start_positions,
                                        end_positions=end_positions)
        outputs = self.bert_model(inputs_embeds=inputs_embeds,
                                  attention_mask=attention_mask,
                                  start_positions=start_positions,
                                  end_positions=end_positions)
        loss = 0.5 * (outputs[0] + noise_outputs[0])
        return loss, kl


def make_batches(n_batches):
    batches = []
    for _ in range(n_batches):
        input_ids = torch.randint(1, VOCAB, (BATCH, SEQ))
        lengths = torch.randint(SEQ // 2, SEQ + 1, (BATCH,))
        mask = (torch.arange(SEQ)[None, :] < lengths[:, None]).long()
        start = (torch.rand(BATCH) * (lengths - 4)).long()
        end = start + torch.randint(0, 4, (BATCH,))
        batches.append((input_ids, mask, start, end))
    return batches


def process_batch(batch):
    input_ids, mask, start, end = batch
    max_length = int(mask.sum(1).max())
    # (the script moves each tensor to the GPU here, which also makes it contiguous)
    return {"input_ids": input_ids[:, :max_length].contiguous(),
            "attention_mask": mask[:, :max_length].contiguous(),
            "start_positions": start.clone(), "end_positions": end.clone()}


model = VariationalBert()
train_loader = make_batches(4)
beta = 1.0
no_decay = ["bias", "layer_norm.weight", "norm1.weight", "norm2.weight"]
optimizer_grouped_parameters = [
    {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
     "weight_decay": 0.01},
    {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
     "weight_decay": 0.0},
]
optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=3e-4, eps=1e-8)
t_total = 2 * len(train_loader)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 2) * max(0.0, 1 - step / t_total))

for epoch in range(2):
    model.train()
    for batch in train_loader:
        inputs = process_batch(batch)
        nll, kl = model(**inputs)
        loss = nll + kl * beta
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        model.zero_grad()
    print(f"epoch {epoch}: NLL {nll.item():.4f}, KL {kl.item():.4f}")
