"""Coastal visibility: a LightGCN-style station graph whose propagated embeddings are cached on the model.

Reduced from sisinflab/warprec pull request #22, "Graph models embedding cache"
(https://github.com/sisinflab/warprec/pull/22): the graph recommenders got a
cache of the propagated user and item embeddings kept on the module
(``_cached_user_emb`` / ``_cached_item_emb``), emptied when ``train()`` or
``eval()`` switches the mode. The merged version fills the cache only in eval
mode, under ``torch.no_grad()``, and recomputes the propagation on every call
in training mode. A cache that is also filled while training keeps the first
batch's propagated embeddings, graph and all, and the next batch's backward
runs through the graph the first backward already freed.

The writer's setting: lighthouse and weather stations along a coast form a
graph (line-of-sight neighbours); station embeddings are propagated over it,
and a head predicts the hour's visibility (log km) from the propagated
station embedding and local weather features (the report is a user/item
recommender, the training setting is the writer's).
"""
import torch
import torch.nn as nn

torch.manual_seed(11)

N_STATIONS, EMB, N_WX, N_LAYERS = 24, 16, 5, 2


def coastal_adjacency(n):
    idx = torch.arange(n)
    rows = torch.cat([idx[:-1], idx[1:], idx[:-3], idx[3:]])
    cols = torch.cat([idx[1:], idx[:-1], idx[3:], idx[:-3]])
    adj = torch.zeros(n, n)
    adj[rows, cols] = 1.0
    deg = adj.sum(1).clamp(min=1).pow(-0.5)
    return deg[:, None] * adj * deg[None, :]


class StationGraph(nn.Module):
    def __init__(self, adj):
        super().__init__()
        self.register_buffer("adj", adj)
        self.station = nn.Embedding(adj.shape[0], EMB)
        self.head = nn.Sequential(nn.Linear(EMB + N_WX, 32), nn.ReLU(), nn.Linear(32, 1))
        self._cached_emb = None

    def train(self, mode=True):
        super().train(mode)
        self._cached_emb = None
        return self

    def _propagate(self):
        layers = [self.station.weight]
        for _ in range(N_LAYERS):
            layers.append(self.adj @ layers[-1])
        return torch.stack(layers).mean(0)

    def propagate(self):
        if self.training:
            return self._propagate()
        if self._cached_emb is None:
            with torch.no_grad():
                self._cached_emb = self._propagate()
        return self._cached_emb

    def forward(self, station_ids, weather):
        emb = self.propagate()[station_ids]
        return self.head(torch.cat([emb, weather], dim=1)).squeeze(1)


def make_hours(n):
    ids = torch.randint(0, N_STATIONS, (n,))
    wx = torch.randn(n, N_WX)
    log_vis = 2.5 - 0.8 * wx[:, 0].clamp(min=0) + 0.3 * wx[:, 1] + 0.05 * ids.float() / N_STATIONS
    return ids, wx, log_vis


def train_epoch(model, opt, hours, batch):
    model.train()
    ids, wx, y = hours
    for start in range(0, len(y), batch):
        sl = slice(start, start + batch)
        pred = model(ids[sl], wx[sl])
        vis_loss = nn.functional.mse_loss(pred, y[sl])
        opt.zero_grad()
        vis_loss.backward()
        opt.step()
    return vis_loss.item()


if __name__ == "__main__":
    net = StationGraph(coastal_adjacency(N_STATIONS))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    hours = make_hours(128)
    for epoch in range(2):
        print(f"epoch {epoch}: visibility mse {train_epoch(net, opt, hours, batch=32):.4f}")
