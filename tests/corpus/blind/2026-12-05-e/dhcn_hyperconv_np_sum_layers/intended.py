"""Reduced from https://github.com/xiaxin1998/DHCN/issues/8

DHCN (session-based recommendation with a dual-channel hypergraph convolutional network): HyperConv
propagates the item embedding table through the hypergraph's item-item adjacency `layers` times, keeps
every layer's output in a Python list `final`, and averages them with `np.sum(final, 0)`. The reporter
got "Can't call numpy() on Tensor that requires grad" at that line; the author could not reproduce it
("it is because of version"), and suggested detaching the layers into numpy. Under the author's
versions NumPy summed the list of tensors with `+`, keeping the graph, so the layer average trained the
item embeddings through every propagation layer (LightGCN-style); current NumPy converts each tensor
with .numpy() instead.

Here DHCN's hypergraph channel (HyperConv, the position-aware soft attention over the session's items,
scores against every item, cross-entropy on the next item) on synthetic sessions, with the repository's
training function; the line-graph channel and its self-supervised loss are left out, and the sparse
adjacency is built with torch instead of scipy.
"""
import math

import numpy as np
import torch
from torch import nn
from torch.nn import Module

torch.manual_seed(0)
np.random.seed(0)


def hypergraph_adjacency(sessions, n_node):
    # H_T: sessions x items incidence; adjacency = D_v^-1 H B^-1 H^T (item x item), as DHCN's util.Data
    H_T = np.zeros((len(sessions), n_node))
    for j, session in enumerate(sessions):
        for item in set(session):
            H_T[j, item - 1] = 1.0
    BH_T = H_T / H_T.sum(axis=1, keepdims=True)
    H = H_T.T
    DH = H / np.maximum(H.sum(axis=1, keepdims=True), 1.0)
    return DH @ BH_T


class Data:
    def __init__(self, sessions, targets, n_node):
        self.raw = sessions
        self.targets = np.asarray(targets)
        self.adjacency = hypergraph_adjacency(sessions, n_node)
        self.n_node = n_node
        self.length = len(sessions)

    def generate_batch(self, batch_size):
        n_batch = self.length // batch_size
        return np.split(np.arange(n_batch * batch_size), n_batch)

    def get_slice(self, index):
        inp = [self.raw[i] for i in index]
        max_n_node = max(len(s) for s in inp)
        session_len, items, reversed_sess_item, mask = [], [], [], []
        for session in inp:
            pad = (max_n_node - len(session)) * [0]
            session_len.append([len(session)])
            items.append(session + pad)
            mask.append([1] * len(session) + pad)
            reversed_sess_item.append(list(reversed(session)) + pad)
        return self.targets[index] - 1, session_len, items, reversed_sess_item, mask


class HyperConv(Module):
    def __init__(self, layers, emb_size=100):
        super(HyperConv, self).__init__()
        self.emb_size = emb_size
        self.layers = layers

    def forward(self, adjacency, embedding):
        item_embeddings = embedding
        item_embedding_layer0 = item_embeddings
        final = [item_embedding_layer0]
        for i in range(self.layers):
            item_embeddings = torch.sparse.mm(adjacency, item_embeddings)
            final.append(item_embeddings)
        item_embeddings = torch.sum(torch.stack(final), 0) / (self.layers + 1)
        return item_embeddings


class DHCN(Module):
    def __init__(self, adjacency, n_node, lr, layers, l2, emb_size=100, batch_size=100):
        super(DHCN, self).__init__()
        self.emb_size = emb_size
        self.batch_size = batch_size
        self.n_node = n_node
        self.L2 = l2
        self.lr = lr
        self.layers = layers
        rows, cols = np.nonzero(adjacency)
        i = torch.LongTensor(np.vstack((rows, cols)))
        v = torch.FloatTensor(adjacency[rows, cols])
        self.adjacency = torch.sparse_coo_tensor(i, v, torch.Size(adjacency.shape), check_invariants=True)
        self.embedding = nn.Embedding(self.n_node, self.emb_size)
        self.pos_embedding = nn.Embedding(200, self.emb_size)
        self.HyperGraph = HyperConv(self.layers, emb_size=self.emb_size)
        self.w_1 = nn.Linear(2 * self.emb_size, self.emb_size)
        self.w_2 = nn.Parameter(torch.Tensor(self.emb_size, 1))
        self.glu1 = nn.Linear(self.emb_size, self.emb_size)
        self.glu2 = nn.Linear(self.emb_size, self.emb_size, bias=False)
        self.loss_function = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.Adam(self.parameters(), lr=self.lr)
        self.init_parameters()

    def init_parameters(self):
        stdv = 1.0 / math.sqrt(self.emb_size)
        for weight in self.parameters():
            weight.data.uniform_(-stdv, stdv)

    def generate_sess_emb(self, item_embedding, session_item, session_len, reversed_sess_item, mask):
        zeros = torch.zeros(1, self.emb_size)
        item_embedding = torch.cat([zeros, item_embedding], 0)
        get = lambda i: item_embedding[reversed_sess_item[i]]
        seq_h = torch.zeros(self.batch_size, list(reversed_sess_item.shape)[1], self.emb_size)
        for i in torch.arange(session_item.shape[0]):
            seq_h[i] = get(i)
        hs = torch.div(torch.sum(seq_h, 1), session_len)
        mask = mask.float().unsqueeze(-1)
        len = seq_h.shape[1]
        pos_emb = self.pos_embedding.weight[:len]
        pos_emb = pos_emb.unsqueeze(0).repeat(self.batch_size, 1, 1)

        hs = hs.unsqueeze(-2).repeat(1, len, 1)
        nh = self.w_1(torch.cat([pos_emb, seq_h], -1))
        nh = torch.tanh(nh)
        nh = torch.sigmoid(self.glu1(nh) + self.glu2(hs))
        beta = torch.matmul(nh, self.w_2)
        beta = beta * mask
        select = torch.sum(beta * seq_h, 1)
        return select

    def forward(self, session_item, session_len, reversed_sess_item, mask):
        item_embeddings_hg = self.HyperGraph(self.adjacency, self.embedding.weight)
        sess_emb_hgnn = self.generate_sess_emb(item_embeddings_hg, session_item, session_len, reversed_sess_item, mask)
        return item_embeddings_hg, sess_emb_hgnn


def forward(model, i, data):
    tar, session_len, session_item, reversed_sess_item, mask = data.get_slice(i)
    session_item = torch.Tensor(session_item).long()
    session_len = torch.Tensor(session_len).long()
    tar = torch.Tensor(tar).long()
    mask = torch.Tensor(mask).long()
    reversed_sess_item = torch.Tensor(reversed_sess_item).long()
    item_emb_hg, sess_emb_hgnn = model(session_item, session_len, reversed_sess_item, mask)
    scores = torch.mm(sess_emb_hgnn, torch.transpose(item_emb_hg, 1, 0))
    return tar, scores


def train_test(model, train_data):
    total_loss = 0.0
    slices = train_data.generate_batch(model.batch_size)
    for i in slices:
        model.zero_grad()
        targets, scores = forward(model, i, train_data)
        loss = model.loss_function(scores + 1e-8, targets)
        loss.backward()
        model.optimizer.step()
        total_loss += loss.item()
    print('\tLoss:\t%.3f' % total_loss)
    return total_loss


def make_sessions(n_sessions, n_node, n_topics=5):
    # items 1..n_node fall into topics; a session browses one topic and its target is another item of it
    per_topic = n_node // n_topics
    sessions, targets = [], []
    for _ in range(n_sessions):
        topic = np.random.randint(n_topics)
        length = np.random.randint(2, 6)
        picks = np.random.choice(per_topic, length + 1, replace=False) + topic * per_topic + 1
        sessions.append([int(p) for p in picks[:-1]])
        targets.append(int(picks[-1]))
    return sessions, targets


N_NODE = 30
sessions, targets = make_sessions(96, N_NODE)
train_data = Data(sessions, targets, N_NODE)
model = DHCN(adjacency=train_data.adjacency, n_node=N_NODE, lr=0.001, layers=2, l2=1e-5, emb_size=16, batch_size=16)

for epoch in range(3):
    print('epoch: ', epoch)
    train_test(model, train_data)
