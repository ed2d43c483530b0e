"""Autoregressive graph generation: GraphRNN with a node-level GRU, an edge-level GRU and a degree head.

Source: https://github.com/knazeri/edge-connect/issues/40 ("Trying to backward through the graph a
second time" in ``self.edge_model.backward(e_gen_loss, e_dis_loss)`` with the joint model). In
edge-connect's joint model the edge generator's output feeds the inpainting generator; the script
first backwards the inpainting model's losses, which frees the edge generator's graph, then the edge
model's own generator loss, which needs that graph again. The training setting is the writer's.

The author trains GraphRNN on BFS adjacency sequences of small random graphs. Like GraphRNN it keeps
two optimizers, one for the node-level RNN and one for the edge-level RNN, and each model has its
own ``backward`` helper: the edge-level loss (through the node-level hidden state that initialises
the edge-level GRU) is backwarded first, then the node-level model's auxiliary degree loss.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

M = 4          # max previous nodes an edge can reach in BFS order
N_NODES = 10
HIDDEN, EDGE_HIDDEN = 32, 16


def random_graph_sequence():
    """A connected random graph in BFS order, as adjacency rows to the previous M nodes."""
    adj = torch.zeros(N_NODES, N_NODES)
    for i in range(1, N_NODES):
        j = int(torch.randint(max(0, i - M), i, (1,)))
        adj[i, j] = adj[j, i] = 1
        if i >= 2 and torch.rand(1) < 0.4:
            k = int(torch.randint(max(0, i - M), i, (1,)))
            adj[i, k] = adj[k, i] = 1
    rows = torch.zeros(N_NODES, M)
    for i in range(1, N_NODES):
        prev = adj[i, max(0, i - M):i].flip(0)
        rows[i, :prev.numel()] = prev
    return rows[1:]  # (N_NODES - 1, M): row t says which of the M previous nodes node t+1 links to


class NodeRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(M, 32)
        self.gru = nn.GRU(32, HIDDEN, num_layers=2, batch_first=True)
        self.to_edge_hidden = nn.Linear(HIDDEN, EDGE_HIDDEN)
        self.degree_head = nn.Sequential(nn.Linear(HIDDEN, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        h, _ = self.gru(F.relu(self.embed(x)))
        return self.to_edge_hidden(h), self.degree_head(h).squeeze(-1)


class EdgeRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(1, 8)
        self.gru = nn.GRU(8, EDGE_HIDDEN, batch_first=True)
        self.out = nn.Linear(EDGE_HIDDEN, 1)

    def forward(self, edge_in, h0):
        y, _ = self.gru(F.relu(self.embed(edge_in)), h0)
        return self.out(y).squeeze(-1)


def rnn_backward(loss):
    optimizer_rnn.zero_grad()
    loss.backward()
    optimizer_rnn.step()


def output_backward(loss):
    optimizer_output.zero_grad()
    loss.backward()
    optimizer_output.step()


rnn, output = NodeRNN(), EdgeRNN()
optimizer_rnn = torch.optim.Adam(rnn.parameters(), lr=3e-3)
optimizer_output = torch.optim.Adam(output.parameters(), lr=3e-3)
graphs = [torch.stack([random_graph_sequence() for _ in range(8)]) for _ in range(3)]

for epoch in range(2):
    for y in graphs:                                  # (B, N-1, M)
        B, T, _ = y.shape
        x = torch.cat([torch.ones(B, 1, M), y[:, :-1]], 1)   # SOS row, then teacher forcing
        edge_h0, degree_pred = rnn(x)
        # edge level: one short sequence per (graph, node), initialised from the node-level state
        h0 = edge_h0.reshape(1, B * T, EDGE_HIDDEN)
        target = y.reshape(B * T, M)
        edge_in = torch.cat([torch.ones(B * T, 1), target[:, :-1]], 1).unsqueeze(-1)
        logits = output(edge_in, h0)
        loss_edge = F.binary_cross_entropy_with_logits(logits, target)
        loss_degree = F.mse_loss(degree_pred, y.sum(-1))
        output_backward(loss_edge)
        rnn_backward(loss_degree)
    print(f"epoch {epoch}: edge {loss_edge.item():.4f} degree {loss_degree.item():.4f}")
