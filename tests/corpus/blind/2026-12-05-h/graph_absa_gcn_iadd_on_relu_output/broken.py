"""Aspect-based sentiment classification with an interactive GCN (InterGCN): BiLSTM over
the sentence, two GCN layers on the dependency graph, two on the aspect-focused graph,
position weighting around the aspect, aspect masking, and attention back onto the LSTM
states.

Reduced from https://github.com/BinLiang-NLP/InterGCN-ABSA/issues/4 (models/intergcn.py,
train.py `_train`): frozen pretrained embeddings, Adam on the trainable parameters,
cross-entropy over three polarities. Synthetic sentences, aspect spans and adjacency
matrices instead of SemEval rest14.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(29)
np.random.seed(29)


class Opt:
    embed_dim = 20
    hidden_dim = 12
    polarities_dim = 3
    batch_size = 4
    learning_rate = 1e-3
    num_epoch = 2


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.1)
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None

    def forward(self, text, adj):
        hidden = torch.matmul(text.float(), self.weight)
        denom = torch.sum(adj, dim=2, keepdim=True) + 1
        output = torch.matmul(adj, hidden) / denom
        return output + self.bias if self.bias is not None else output


class INTERGCN(nn.Module):
    def __init__(self, embedding_matrix, opt):
        super().__init__()
        self.opt = opt
        self.embed = nn.Embedding.from_pretrained(torch.tensor(embedding_matrix, dtype=torch.float))
        self.text_lstm = nn.LSTM(opt.embed_dim, opt.hidden_dim, batch_first=True, bidirectional=True)
        self.gc1 = GraphConvolution(2 * opt.hidden_dim, 2 * opt.hidden_dim)
        self.gc2 = GraphConvolution(2 * opt.hidden_dim, 2 * opt.hidden_dim)
        self.gc3 = GraphConvolution(2 * opt.hidden_dim, 2 * opt.hidden_dim)
        self.gc4 = GraphConvolution(2 * opt.hidden_dim, 2 * opt.hidden_dim)
        self.fc = nn.Linear(2 * opt.hidden_dim, opt.polarities_dim)
        self.text_embed_dropout = nn.Dropout(0.3)

    def position_weight(self, x, aspect_double_idx, text_len, aspect_len):
        batch_size, seq_len = x.shape[0], x.shape[1]
        aspect_double_idx = aspect_double_idx.cpu().numpy()
        text_len = text_len.cpu().numpy()
        aspect_len = aspect_len.cpu().numpy()
        weight = [[] for _ in range(batch_size)]
        for i in range(batch_size):
            context_len = text_len[i] - aspect_len[i]
            for j in range(aspect_double_idx[i, 0]):
                weight[i].append(1 - (aspect_double_idx[i, 0] - j) / context_len)
            for j in range(aspect_double_idx[i, 0], aspect_double_idx[i, 1] + 1):
                weight[i].append(0)
            for j in range(aspect_double_idx[i, 1] + 1, text_len[i]):
                weight[i].append(1 - (j - aspect_double_idx[i, 1]) / context_len)
            for j in range(text_len[i], seq_len):
                weight[i].append(0)
        weight = torch.tensor(weight, dtype=torch.float).unsqueeze(2)
        return weight * x

    def mask(self, x, aspect_double_idx):
        batch_size, seq_len = x.shape[0], x.shape[1]
        aspect_double_idx = aspect_double_idx.cpu().numpy()
        mask = [[] for _ in range(batch_size)]
        for i in range(batch_size):
            for j in range(aspect_double_idx[i, 0]):
                mask[i].append(0)
            for j in range(aspect_double_idx[i, 0], aspect_double_idx[i, 1] + 1):
                mask[i].append(1)
            for j in range(aspect_double_idx[i, 1] + 1, seq_len):
                mask[i].append(0)
        mask = torch.tensor(mask).unsqueeze(2).float()
        return mask * x

    def forward(self, inputs):
        text_indices, aspect_indices, left_indices, adj, d_adj = inputs
        text_len = torch.sum(text_indices != 0, dim=-1)
        aspect_len = torch.sum(aspect_indices != 0, dim=-1)
        left_len = torch.sum(left_indices != 0, dim=-1)
        aspect_double_idx = torch.cat([left_len.unsqueeze(1), (left_len + aspect_len - 1).unsqueeze(1)], dim=1)
        text = self.embed(text_indices)
        text = self.text_embed_dropout(text)
        text_out, (_, _) = self.text_lstm(text)

        x = F.relu(self.gc1(self.position_weight(text_out, aspect_double_idx, text_len, aspect_len), adj))
        x = F.relu(self.gc2(self.position_weight(x, aspect_double_idx, text_len, aspect_len), adj))

        x_d = F.relu(self.gc3(self.position_weight(x, aspect_double_idx, text_len, aspect_len), d_adj))
        x_d = F.relu(self.gc4(self.position_weight(x_d, aspect_double_idx, text_len, aspect_len), d_adj))

        x += 0.2 * x_d

        x = self.mask(x, aspect_double_idx)
        alpha_mat = torch.matmul(x, text_out.transpose(1, 2))
        alpha = F.softmax(alpha_mat.sum(1, keepdim=True), dim=2)
        x = torch.matmul(alpha, text_out).squeeze(1)
        return self.fc(x)


def make_dataset(n, seq_len=10, vocab=50):
    batches = []
    for _ in range(n):
        text = torch.randint(1, vocab, (Opt.batch_size, seq_len))
        left_len = torch.randint(1, 4, (Opt.batch_size,))
        aspect_len = torch.randint(1, 3, (Opt.batch_size,))
        left = torch.zeros_like(text)
        aspect = torch.zeros_like(text)
        for i in range(Opt.batch_size):
            left[i, : left_len[i]] = text[i, : left_len[i]]
            aspect[i, : aspect_len[i]] = text[i, left_len[i] : left_len[i] + aspect_len[i]]
        adj = (torch.rand(Opt.batch_size, seq_len, seq_len) < 0.3).float()
        d_adj = (torch.rand(Opt.batch_size, seq_len, seq_len) < 0.3).float()
        polarity = torch.randint(0, Opt.polarities_dim, (Opt.batch_size,))
        batches.append(((text, aspect, left, adj, d_adj), polarity))
    return batches


class Instructor:
    def __init__(self, opt):
        self.opt = opt
        embedding_matrix = np.random.uniform(-0.25, 0.25, (50, opt.embed_dim))
        self.model = INTERGCN(embedding_matrix, opt)
        self.train_data_loader = make_dataset(3)

    def _train(self, criterion, optimizer):
        for epoch in range(self.opt.num_epoch):
            for i_batch, (inputs, targets) in enumerate(self.train_data_loader):
                self.model.train()
                optimizer.zero_grad()
                outputs = self.model(inputs)
                loss = criterion(outputs, targets)
                loss.backward()
                optimizer.step()
                print(f"epoch {epoch} batch {i_batch}: loss {loss.item():.4f}")

    def run(self):
        criterion = nn.CrossEntropyLoss()
        _params = filter(lambda p: p.requires_grad, self.model.parameters())
        optimizer = torch.optim.Adam(_params, lr=self.opt.learning_rate, weight_decay=1e-5)
        self._train(criterion, optimizer)


ins = Instructor(Opt())
ins.run()
