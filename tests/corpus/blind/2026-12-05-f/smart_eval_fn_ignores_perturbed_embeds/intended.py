"""Reduced from https://github.com/archinetai/smart-pytorch/issues/5

smart-pytorch implements SMART, a smoothness-inducing adversarial regulariser for fine-tuning
pretrained language models: SMARTLoss(eval_fn, loss_fn) perturbs the input embeddings with a
small noise, runs eval_fn on them, takes the gradient of the divergence with respect to the noise
(torch.autograd.grad(loss, noise)) to move the noise adversarially, and returns the divergence
at the final noise. The README shows a RoBERTa classifier wrapped so that eval_fn(embed) runs
the encoder with inputs_embeds=embed. The reporter, with their own model, got "One of the
differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if
this is the desired behavior." at that autograd.grad line. The report does not show the
reporter's eval_fn; the reading here (the writer's) is the way this line raises that error with
the library's code as published: the eval function, adapted for a BERT classifier, runs the
encoder on the batch's input_ids from the enclosing scope instead of on the embeddings it is
given, so the noise never reaches the loss.

Here SMARTLoss as the library defines it (re-typed, not imported), a small BERT-like
classifier, the README's wrapper adapted for BERT, and a fine-tuning loop on synthetic tokens.
"""
from itertools import count

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, HIDDEN, SEQ, N_LABELS = 120, 32, 16, 2


def inf_norm(x):
    return torch.norm(x, p=float("inf"), dim=-1, keepdim=True)


def kl_loss(input, target, reduction="batchmean"):
    return F.kl_div(F.log_softmax(input, dim=-1), F.softmax(target, dim=-1), reduction=reduction)


def sym_kl_loss(input, target, reduction="sum", alpha=1.0):
    return alpha * F.kl_div(
        F.log_softmax(input, dim=-1), F.softmax(target.detach(), dim=-1), reduction=reduction
    ) + F.kl_div(F.log_softmax(target, dim=-1), F.softmax(input.detach(), dim=-1), reduction=reduction)


class SMARTLoss(nn.Module):
    def __init__(self, eval_fn, loss_fn, loss_last_fn=None, norm_fn=inf_norm, num_steps=1,
                 step_size=1e-3, epsilon=1e-6, noise_var=1e-5):
        super().__init__()
        self.eval_fn = eval_fn
        self.loss_fn = loss_fn
        self.loss_last_fn = loss_last_fn if loss_last_fn is not None else loss_fn
        self.norm_fn = norm_fn
        self.num_steps = num_steps
        self.step_size = step_size
        self.epsilon = epsilon
        self.noise_var = noise_var

    def forward(self, embed, state):
        noise = torch.randn_like(embed, requires_grad=True) * self.noise_var
        for i in count():
            embed_perturbed = embed + noise
            state_perturbed = self.eval_fn(embed_perturbed)
            if i == self.num_steps:
                return self.loss_last_fn(state_perturbed, state)
            loss = self.loss_fn(state_perturbed, state.detach())
            noise_gradient, = torch.autograd.grad(loss, noise)
            step = noise + self.step_size * noise_gradient
            step_norm = self.norm_fn(step)
            noise = step / (step_norm + self.epsilon)
            noise = noise.detach().requires_grad_()


class BertEmbeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, HIDDEN, padding_idx=0)
        self.position_embeddings = nn.Embedding(SEQ, HIDDEN)
        self.LayerNorm = nn.LayerNorm(HIDDEN)
        self.dropout = nn.Dropout(0.1)

    def forward(self, input_ids=None, inputs_embeds=None):
        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)
        positions = torch.arange(inputs_embeds.size(1))
        return self.dropout(self.LayerNorm(inputs_embeds + self.position_embeddings(positions)))


class BertModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = BertEmbeddings()
        layer = nn.TransformerEncoderLayer(HIDDEN, 4, 64, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)

    def forward(self, input_ids=None, attention_mask=None, inputs_embeds=None):
        h = self.embeddings(input_ids=input_ids, inputs_embeds=inputs_embeds)
        return (self.encoder(h, src_key_padding_mask=attention_mask == 0),)


class BertForSequenceClassification(nn.Module):
    def __init__(self):
        super().__init__()
        self.bert = BertModel()
        self.classifier = nn.Linear(HIDDEN, N_LABELS)


class SMARTBertClassificationModel(nn.Module):
    def __init__(self, model, weight=0.02):
        super().__init__()
        self.model = model
        self.weight = weight

    def forward(self, input_ids, attention_mask, labels):
        # Get initial embeddings
        embed = self.model.bert.embeddings(input_ids)

        # Define eval function
        def eval(embed):
            outputs = self.model.bert(inputs_embeds=embed, attention_mask=attention_mask)
            pooled = outputs[0][:, 0]
            logits = self.model.classifier(pooled)
            return logits

        smart_loss_fn = SMARTLoss(eval_fn=eval, loss_fn=kl_loss, loss_last_fn=sym_kl_loss)
        state = eval(embed)
        loss = F.cross_entropy(state.view(-1, N_LABELS), labels.view(-1))
        loss += self.weight * smart_loss_fn(embed, state)
        return state, loss


lengths = torch.randint(SEQ // 2, SEQ + 1, (64,))
attention_mask = (torch.arange(SEQ)[None, :] < lengths[:, None]).long()
input_ids = torch.randint(1, VOCAB, (64, SEQ)) * attention_mask
labels = torch.randint(0, N_LABELS, (64,))

model = SMARTBertClassificationModel(BertForSequenceClassification())
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)

for epoch in range(2):
    model.train()
    for i in range(0, 64, 16):
        state, loss = model(input_ids[i:i + 16], attention_mask[i:i + 16], labels[i:i + 16])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
