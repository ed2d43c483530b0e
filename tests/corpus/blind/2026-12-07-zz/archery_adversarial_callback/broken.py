"""Archery end scoring: a small trainer whose backward is done by a callback.

Source: https://github.com/allenai/allennlp/pull/5249 (AllenNLP's ``on_backward``
trainer callback). The author needed adversarial training, in which backward runs
twice per batch (once on the clean loss, once on the loss of a perturbed
embedding), so the backward moved into a callback that tells the trainer whether
it already ran; the trainer calls ``loss.backward()`` itself only when no callback
did. Here a hand-written trainer follows that protocol for an archery scoring
model: each arrow of an end is a token (target face, distance class) plus its
impact coordinates, and the model predicts the ring score of every arrow. An FGM
style callback runs the clean backward, perturbs the token embedding along its
gradient, runs the adversarial backward and restores the embedding, but does not
report back to the trainer that the backward was done.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

CONFIG = {
    "n_tokens": 24,       # target face x distance class
    "embed_dim": 16,
    "hidden": 48,
    "n_rings": 11,        # 0 (miss) .. 10
    "arrows_per_end": 6,
    "batch_size": 32,
    "lr": 3e-3,
    "fgm_epsilon": 0.5,
    "epochs": 3,
}


def make_ends(n_ends, cfg):
    tokens = torch.randint(0, cfg["n_tokens"], (n_ends, cfg["arrows_per_end"]))
    impact = torch.randn(n_ends, cfg["arrows_per_end"], 2) * 0.6
    radius = impact.norm(dim=-1)
    rings = (10 - (radius * 6).floor()).clamp(0, 10).long()
    return tokens, impact, rings


class EndScorer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.arrow_embed = nn.Embedding(cfg["n_tokens"], cfg["embed_dim"])
        self.impact_proj = nn.Linear(2, cfg["embed_dim"])
        self.encoder = nn.GRU(cfg["embed_dim"], cfg["hidden"], batch_first=True)
        self.ring_head = nn.Linear(cfg["hidden"], cfg["n_rings"])

    def forward(self, tokens, impact):
        h = self.arrow_embed(tokens) + self.impact_proj(impact)
        states, _ = self.encoder(h)
        return self.ring_head(states)


class TrainerCallback:
    def on_backward(self, trainer, loss, backward_called):
        return False

    def on_batch_end(self, trainer, batch_loss):
        pass


class FGMAdversarialCallback(TrainerCallback):
    def __init__(self, epsilon):
        self.epsilon = epsilon

    def on_backward(self, trainer, loss, backward_called):
        if backward_called:
            return False
        loss.backward()
        emb = trainer.model.arrow_embed.weight
        norm = emb.grad.norm()
        if torch.isfinite(norm) and norm > 0:
            delta = self.epsilon * emb.grad / norm
            emb.data.add_(delta)
            adv_loss = trainer.compute_loss(trainer.current_batch)
            adv_loss.backward()
            emb.data.sub_(delta)


class LossLogger(TrainerCallback):
    def __init__(self):
        self.history = []

    def on_batch_end(self, trainer, batch_loss):
        self.history.append(batch_loss)


class Trainer:
    def __init__(self, model, optimizer, callbacks):
        self.model = model
        self.optimizer = optimizer
        self.callbacks = callbacks
        self.current_batch = None

    def compute_loss(self, batch):
        tokens, impact, rings = batch
        logits = self.model(tokens, impact)
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), rings.reshape(-1))

    def train_step(self, batch):
        self.current_batch = batch
        self.optimizer.zero_grad()
        loss = self.compute_loss(batch)
        backward_called = False
        for callback in self.callbacks:
            backward_called |= bool(callback.on_backward(self, loss, backward_called))
        if not backward_called:
            loss.backward()
        self.optimizer.step()
        for callback in self.callbacks:
            callback.on_batch_end(self, loss.item())
        return loss.item()

    def fit(self, data, epochs, batch_size):
        tokens, impact, rings = data
        for epoch in range(epochs):
            order = torch.randperm(tokens.size(0))
            total = 0.0
            for start in range(0, tokens.size(0), batch_size):
                idx = order[start:start + batch_size]
                total += self.train_step((tokens[idx], impact[idx], rings[idx]))
            print(f"epoch {epoch}: loss {total:.3f}")


def main():
    data = make_ends(192, CONFIG)
    model = EndScorer(CONFIG)
    optimizer = torch.optim.Adam(model.parameters(), lr=CONFIG["lr"])
    logger = LossLogger()
    trainer = Trainer(model, optimizer, [FGMAdversarialCallback(CONFIG["fgm_epsilon"]), logger])
    trainer.fit(data, CONFIG["epochs"], CONFIG["batch_size"])
    print("last batch losses:", [round(v, 3) for v in logger.history[-3:]])


if __name__ == "__main__":
    main()
