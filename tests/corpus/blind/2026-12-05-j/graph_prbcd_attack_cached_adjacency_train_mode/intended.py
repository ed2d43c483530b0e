"""Structure attack (PR-BCD style) on a two-layer GCN, with the attacked model kept in train() mode.

Source: https://github.com/sigeisler/robustness_of_gnns_at_scale/issues/4

The author trains a GCN for node classification on a citation-like graph, then runs a
projected randomized block coordinate descent (PR-BCD) attack: continuous weights on a block
of candidate edges are optimised to raise the model's loss on the attacked nodes. To try
another attack loss they set ``self.attacked_model.train()`` inside the attack. The GCN
preprocesses (self-loops + symmetric normalisation) the weighted adjacency, with an option to
cache that preprocessing during training.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_NODES, N_FEATURES, N_CLASSES = 60, 16, 3
PRETRAIN_EPOCHS = 2
ATTACK_EPOCHS = 20
N_CANDIDATES = 80


def make_graph():
    x = torch.randn(N_NODES, N_FEATURES)
    labels = torch.randint(0, N_CLASSES, (N_NODES,))
    src = torch.randint(0, N_NODES, (150,))
    dst = torch.randint(0, N_NODES, (150,))
    edge_index = torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], dim=1)
    return x, edge_index, labels


class GCN(nn.Module):
    def __init__(self, n_features, n_classes, n_filters=32, dropout=0.5, do_cache_adj_prep=True):
        super().__init__()
        self.conv1 = nn.Linear(n_features, n_filters)
        self.conv2 = nn.Linear(n_filters, n_classes)
        self.dropout = dropout
        self.do_cache_adj_prep = do_cache_adj_prep
        self.adj_preped = None

    def release_cache(self):
        self.adj_preped = None

    def _convert_and_normalize(self, edge_index, edge_weight, n):
        if edge_weight is None:
            edge_weight = torch.ones(edge_index.size(1))
        loops = torch.arange(n)
        edge_index = torch.cat([edge_index, torch.stack([loops, loops])], dim=1)
        edge_weight = torch.cat([edge_weight, torch.ones(n)])
        row, col = edge_index
        deg = torch.zeros(n).index_add(0, col, edge_weight)
        deg_inv_sqrt = deg.pow(-0.5)
        deg_inv_sqrt = deg_inv_sqrt.masked_fill(torch.isinf(deg_inv_sqrt), 0.0)
        values = deg_inv_sqrt[row] * edge_weight * deg_inv_sqrt[col]
        adj = torch.zeros(n, n).index_put((col, row), values, accumulate=True)
        return adj

    def _cache_if_option_is_set(self, edge_index, edge_weight, n):
        if self.training and self.adj_preped is not None:
            return self.adj_preped
        adj = self._convert_and_normalize(edge_index, edge_weight, n)
        if self.training and self.do_cache_adj_prep:
            self.adj_preped = adj
        return adj

    def forward(self, x, edge_index, edge_weight=None):
        adj = self._cache_if_option_is_set(edge_index, edge_weight, x.size(0))
        h = F.relu(adj @ self.conv1(x))
        h = F.dropout(h, p=self.dropout, training=self.training)
        return F.log_softmax(adj @ self.conv2(h), dim=1)


class EdgePerturbation(nn.Module):
    def __init__(self, n_candidates):
        super().__init__()
        self.perturbed_edge_weight = nn.Parameter(torch.full((n_candidates,), 1e-3))


class PRBCD:
    def __init__(self, attacked_model, x, edge_index, labels, attack_idx, lr=0.1):
        self.attacked_model = attacked_model
        self.x, self.edge_index, self.labels, self.attack_idx = x, edge_index, labels, attack_idx
        self.attacked_model.release_cache()
        for p in self.attacked_model.parameters():
            p.requires_grad_(False)
        self.candidates = torch.randint(0, N_NODES, (2, N_CANDIDATES))
        self.perturbation = EdgePerturbation(N_CANDIDATES)
        self.optimizer = torch.optim.Adam(self.perturbation.parameters(), lr=lr)

    def get_modified_adj(self):
        w = self.perturbation.perturbed_edge_weight
        edge_index = torch.cat([self.edge_index, self.candidates], dim=1)
        edge_weight = torch.cat([torch.ones(self.edge_index.size(1)), w])
        return edge_index, edge_weight

    def attack(self, n_epochs):
        self.attacked_model.train()
        for epoch in range(n_epochs):
            self.optimizer.zero_grad()
            edge_index, edge_weight = self.get_modified_adj()
            logits = self.attacked_model(self.x, edge_index, edge_weight)
            attack_loss = -F.nll_loss(logits[self.attack_idx], self.labels[self.attack_idx])
            attack_loss.backward()
            self.optimizer.step()
            with torch.no_grad():
                self.perturbation.perturbed_edge_weight.clamp_(0.0, 1.0)
            print(f"attack epoch {epoch}: loss {-attack_loss.item():.4f}")


def pretrain(model, x, edge_index, labels, train_idx):
    train_opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
    model.train()
    for epoch in range(PRETRAIN_EPOCHS):
        train_opt.zero_grad()
        train_loss = F.nll_loss(model(x, edge_index)[train_idx], labels[train_idx])
        train_loss.backward()
        train_opt.step()
    return model


x, edge_index, labels = make_graph()
perm = torch.randperm(N_NODES)
train_idx, attack_idx = perm[:30], perm[30:]
gcn = GCN(N_FEATURES, N_CLASSES, do_cache_adj_prep=False)
pretrain(gcn, x, edge_index, labels, train_idx)
attack = PRBCD(gcn, x, edge_index, labels, attack_idx)
attack.attack(ATTACK_EPOCHS)
