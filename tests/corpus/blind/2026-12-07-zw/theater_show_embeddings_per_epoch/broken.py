"""Theater ticket demand: patrons are scored against every show of the season.

Reduced from https://discuss.pytorch.org/t/how-to-update-item-embeddings-in-every-epoch-and-user-embeddings-in-each-batch-in-an-epoch-runtimeerror-trying-to-backward-through-the-graph-a-second-time/124239
The author trained a recommender with a user encoder and an item encoder under one
Adam optimizer. The item embeddings were meant to be refreshed once per epoch and the
user embeddings once per batch, so `item_embeddings = item_model(input)` sat in the
epoch loop and every batch of that epoch scored `user_embeddings @ item_embeddings.T`
with BCEWithLogitsLoss; the second batch's backward raised "Trying to backward through
the graph a second time".

Here the items are the shows of a theater season (genre, venue, price tier, weekday
mix), the users are patrons described by their booking history, and the label is
whether the patron bought a ticket to the show. The show encoder runs once at the top
of each epoch inside `SeasonTrainer.run_epoch`, and its output is reused by every
patron batch of that epoch.
"""

import torch
import torch.nn as nn

torch.manual_seed(7)

CONFIG = {
    "n_shows": 24,
    "show_features": 10,
    "n_patrons": 96,
    "patron_features": 14,
    "embed_dim": 16,
    "batch_size": 32,
    "epochs": 3,
    "lr": 3e-3,
}


class ShowEncoder(nn.Module):
    """Season catalogue -> one embedding per show."""

    def __init__(self, in_features, dim):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, 32),
            nn.GELU(),
            nn.Linear(32, dim),
        )
        self.norm = nn.LayerNorm(dim)

    def forward(self, shows):
        return self.norm(self.net(shows))


class PatronEncoder(nn.Module):
    """Booking history -> patron embedding, attending over the season's shows."""

    def __init__(self, in_features, dim):
        super().__init__()
        self.history = nn.Sequential(nn.Linear(in_features, 32), nn.Tanh(), nn.Linear(32, dim))
        self.query = nn.Linear(dim, dim, bias=False)

    def forward(self, patrons, show_emb):
        h = self.history(patrons)
        attn = torch.softmax(self.query(h) @ show_emb.T / show_emb.shape[1] ** 0.5, dim=-1)
        return h + attn @ show_emb


def make_season(cfg):
    shows = torch.randn(cfg["n_shows"], cfg["show_features"])
    patrons = torch.randn(cfg["n_patrons"], cfg["patron_features"])
    taste = torch.randn(cfg["patron_features"], cfg["show_features"]) * 0.4
    logits = patrons @ taste @ shows.T
    bought = (torch.sigmoid(logits) > torch.rand_like(logits)).float()
    return shows, patrons, bought


class SeasonTrainer:
    def __init__(self, cfg, show_encoder, patron_encoder):
        self.cfg = cfg
        self.show_encoder = show_encoder
        self.patron_encoder = patron_encoder
        params = list(show_encoder.parameters()) + list(patron_encoder.parameters())
        self.optimizer = torch.optim.Adam(params, lr=cfg["lr"])
        self.criterion = nn.BCEWithLogitsLoss()

    def batches(self, patrons, bought):
        order = torch.randperm(patrons.shape[0])
        bs = self.cfg["batch_size"]
        for start in range(0, len(order), bs):
            idx = order[start:start + bs]
            yield patrons[idx], bought[idx]

    def run_epoch(self, shows, patrons, bought):
        self.show_encoder.train()
        self.patron_encoder.train()
        show_emb = self.show_encoder(shows)
        total = 0.0
        for patron_batch, label_batch in self.batches(patrons, bought):
            self.optimizer.zero_grad()
            patron_emb = self.patron_encoder(patron_batch, show_emb)
            scores = patron_emb @ show_emb.T
            demand_loss = self.criterion(scores, label_batch)
            demand_loss.backward()
            self.optimizer.step()
            total += demand_loss.item()
        return total


def main():
    cfg = CONFIG
    shows, patrons, bought = make_season(cfg)
    show_encoder = ShowEncoder(cfg["show_features"], cfg["embed_dim"])
    patron_encoder = PatronEncoder(cfg["patron_features"], cfg["embed_dim"])
    trainer = SeasonTrainer(cfg, show_encoder, patron_encoder)
    for epoch in range(cfg["epochs"]):
        total = trainer.run_epoch(shows, patrons, bought)
        print(f"epoch {epoch}: demand loss {total:.4f}")


if __name__ == "__main__":
    main()
