"""Aspect-based sentiment classification with DualGCN on top of a BERT-style encoder.

Source: https://github.com/CCChenhao997/DualGCN-ABSA/issues/4

The author trains ``dualgcn_bert``: a (here tiny) BERT encoder, a syntactic GCN over the
dependency adjacency and a semantic GCN over an adjacency built from multi-head self-attention
(the heads' attention maps averaged), joined by a mutual biaffine module; the aspect's pooled
features go to a classifier, and the loss adds orthogonal and differentiated regularisers on
the attention adjacency ('doubleloss'). Adam, cross-entropy, synthetic sentences with one
aspect span each.
"""

import copy
import math
from argparse import Namespace

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

opt = Namespace(
    bert_dim=32,
    num_layers=2,
    attention_heads=1,
    bert_dropout=0.3,
    gcn_dropout=0.1,
    polarities_dim=3,
    losstype="doubleloss",
    alpha=0.25,
    beta=0.25,
    vocab_size=100,
    max_len=12,
)


class TinyBert(nn.Module):
    def __init__(self, vocab_size, dim, max_len):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, dim)
        self.position_embeddings = nn.Embedding(max_len, dim)
        self.segment_embeddings = nn.Embedding(2, dim)
        layer = nn.TransformerEncoderLayer(dim, nhead=2, dim_feedforward=2 * dim, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1, enable_nested_tensor=False)
        self.pooler = nn.Linear(dim, dim)

    def forward(self, input_ids, attention_mask, token_type_ids):
        pos = torch.arange(input_ids.size(1)).unsqueeze(0)
        h = self.word_embeddings(input_ids) + self.position_embeddings(pos) + self.segment_embeddings(token_type_ids)
        h = self.encoder(h, src_key_padding_mask=attention_mask == 0)
        return h, torch.tanh(self.pooler(h[:, 0]))


class LayerNorm(nn.Module):
    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2


def attention(query, key, mask=None, dropout=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = F.softmax(scores, dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return p_attn


class MultiHeadAttention(nn.Module):
    def __init__(self, h, d_model, dropout=0.1):
        super().__init__()
        self.d_k = d_model // h
        self.h = h
        self.linears = nn.ModuleList([copy.deepcopy(nn.Linear(d_model, d_model)) for _ in range(2)])
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, mask=None):
        mask = mask[:, :, : query.size(1)].unsqueeze(1)
        nbatches = query.size(0)
        query, key = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2) for lin, x in zip(self.linears, (query, key))
        ]
        return attention(query, key, mask=mask, dropout=self.dropout)


class GCNBert(nn.Module):
    def __init__(self, bert, opt, num_layers):
        super().__init__()
        self.bert = bert
        self.opt = opt
        self.layers = num_layers
        self.mem_dim = opt.bert_dim // 2
        self.attention_heads = opt.attention_heads
        self.bert_drop = nn.Dropout(opt.bert_dropout)
        self.pooled_drop = nn.Dropout(opt.bert_dropout)
        self.gcn_drop = nn.Dropout(opt.gcn_dropout)
        self.layernorm = LayerNorm(opt.bert_dim)
        self.W = nn.ModuleList(
            [nn.Linear(opt.bert_dim if i == 0 else self.mem_dim, self.mem_dim) for i in range(num_layers)]
        )
        self.attn = MultiHeadAttention(opt.attention_heads, opt.bert_dim)
        self.weight_list = nn.ModuleList(
            [nn.Linear(opt.bert_dim if j == 0 else self.mem_dim, self.mem_dim) for j in range(num_layers)]
        )
        self.affine1 = nn.Parameter(torch.randn(self.mem_dim, self.mem_dim) * 0.1)
        self.affine2 = nn.Parameter(torch.randn(self.mem_dim, self.mem_dim) * 0.1)

    def forward(self, adj, inputs):
        text_bert_indices, bert_segments_ids, attention_mask, adj_dep, src_mask, aspect_mask = inputs
        src_mask = src_mask.unsqueeze(-2)
        sequence_output, pooled_output = self.bert(text_bert_indices, attention_mask, bert_segments_ids)
        sequence_output = self.layernorm(sequence_output)
        gcn_inputs = self.bert_drop(sequence_output)
        pooled_output = self.pooled_drop(pooled_output)

        denom_dep = adj.sum(2).unsqueeze(2) + 1
        attn_tensor = self.attn(gcn_inputs, gcn_inputs, src_mask)
        attn_adj_list = [attn_adj.squeeze(1) for attn_adj in torch.split(attn_tensor, 1, dim=1)]
        adj_ag = None

        # * Average Multi-head Attention matrixes
        for i in range(self.attention_heads):
            if adj_ag is None:
                adj_ag = attn_adj_list[i]
            else:
                adj_ag += attn_adj_list[i]
        adj_ag /= self.attention_heads

        for j in range(adj_ag.size(0)):
            adj_ag[j] -= torch.diag(torch.diag(adj_ag[j]))
            adj_ag[j] += torch.eye(adj_ag[j].size(0))
        adj_ag = src_mask.transpose(1, 2) * adj_ag

        denom_ag = adj_ag.sum(2).unsqueeze(2) + 1
        outputs_ag = gcn_inputs
        outputs_dep = gcn_inputs
        for layer in range(self.layers):
            Ax_dep = adj.bmm(outputs_dep)
            gAxW_dep = F.relu(self.W[layer](Ax_dep) / denom_dep)
            Ax_ag = adj_ag.bmm(outputs_ag)
            gAxW_ag = F.relu(self.weight_list[layer](Ax_ag) / denom_ag)
            A1 = F.softmax(torch.bmm(torch.matmul(gAxW_dep, self.affine1), gAxW_ag.transpose(1, 2)), dim=-1)
            A2 = F.softmax(torch.bmm(torch.matmul(gAxW_ag, self.affine2), gAxW_dep.transpose(1, 2)), dim=-1)
            gAxW_dep, gAxW_ag = torch.bmm(A1, gAxW_ag), torch.bmm(A2, gAxW_dep)
            outputs_dep = self.gcn_drop(gAxW_dep) if layer < self.layers - 1 else gAxW_dep
            outputs_ag = self.gcn_drop(gAxW_ag) if layer < self.layers - 1 else gAxW_ag
        return outputs_ag, outputs_dep, adj_ag, pooled_output


class GCNAbsaModel(nn.Module):
    def __init__(self, bert, opt):
        super().__init__()
        self.opt = opt
        self.gcn = GCNBert(bert, opt, opt.num_layers)

    def forward(self, inputs):
        adj_dep, aspect_mask = inputs[3], inputs[5]
        h1, h2, adj_ag, pooled_output = self.gcn(adj_dep, inputs)
        asp_wn = aspect_mask.sum(dim=1).unsqueeze(-1)
        aspect_mask = aspect_mask.unsqueeze(-1).repeat(1, 1, self.opt.bert_dim // 2)
        outputs1 = (h1 * aspect_mask).sum(dim=1) / asp_wn
        outputs2 = (h2 * aspect_mask).sum(dim=1) / asp_wn
        return outputs1, outputs2, adj_ag, adj_dep, pooled_output


class DualGCNBertClassifier(nn.Module):
    def __init__(self, bert, opt):
        super().__init__()
        self.opt = opt
        self.gcn_model = GCNAbsaModel(bert, opt=opt)
        self.classifier = nn.Linear(opt.bert_dim * 2, opt.polarities_dim)

    def forward(self, inputs):
        outputs1, outputs2, adj_ag, adj_dep, pooled_output = self.gcn_model(inputs)
        logits = self.classifier(torch.cat((outputs1, outputs2, pooled_output), dim=-1))
        identity = torch.eye(adj_ag.size(1)).unsqueeze(0).expand(adj_ag.size(0), adj_ag.size(1), adj_ag.size(1))
        ortho = adj_ag @ adj_ag.transpose(1, 2)
        for i in range(ortho.size(0)):
            ortho[i] -= torch.diag(torch.diag(ortho[i]))
            ortho[i] += torch.eye(ortho[i].size(0))
        penal1 = torch.norm(ortho - identity) / adj_ag.size(0)
        penal2 = adj_ag.size(0) / torch.norm(adj_ag - adj_dep)
        penal = self.opt.alpha * penal1 + self.opt.beta * penal2
        return logits, penal


def make_batch(batch_size):
    lengths = torch.randint(6, opt.max_len + 1, (batch_size,))
    positions = torch.arange(opt.max_len).unsqueeze(0)
    src_mask = (positions < lengths.unsqueeze(1)).long()
    ids = torch.randint(1, opt.vocab_size, (batch_size, opt.max_len)) * src_mask
    segments = torch.zeros_like(ids)
    heads = torch.randint(0, opt.max_len, (batch_size, opt.max_len))
    adj_dep = torch.zeros(batch_size, opt.max_len, opt.max_len)
    adj_dep.scatter_(2, heads.unsqueeze(-1), 1.0)
    adj_dep = ((adj_dep + adj_dep.transpose(1, 2)) > 0).float() * src_mask.unsqueeze(1) * src_mask.unsqueeze(2)
    start = torch.randint(1, 4, (batch_size, 1))
    aspect_mask = ((positions >= start) & (positions < start + 2)).float()
    labels = torch.randint(0, opt.polarities_dim, (batch_size,))
    return (ids, segments, src_mask, adj_dep, src_mask, aspect_mask), labels


bert = TinyBert(opt.vocab_size, opt.bert_dim, opt.max_len)
model = DualGCNBertClassifier(bert, opt)
optimizer = torch.optim.Adam(model.parameters(), lr=2e-5)
batches = [make_batch(8) for _ in range(4)]

model.train()
for epoch in range(2):
    for inputs, targets in batches:
        optimizer.zero_grad()
        logits, penal = model(inputs)
        loss = F.cross_entropy(logits, targets) + penal
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
