"""Library circulation: embed book titles from their borrowing profile, metric loss plus a genre classifier.

Source: https://github.com/KevinMusgrave/powerful-benchmarker/issues/78
With powerful-benchmarker's TrainWithClassifier, the reporter hit "one of the variables needed for gradient
computation has been modified by an inplace operation". The maintainer traced it to the MLP class in
architectures/misc_models.py, whose layers start with nn.ReLU(inplace=True); the reporter disabled
inplace in both the embedder and the classifier MLPs and training ran.

Reduction: a trunk over weekly-loan features per title, an MLP embedder and an MLP genre classifier built
like that MLP class (ReLU first, then Linear), a normalised-embedding contrastive metric loss plus a
cross-entropy classifier loss, and one optimizer per model, as the benchmarker's trainers keep them.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(8)

CONFIG = {
    "n_titles": 48,
    "n_features": 20,
    "n_genres": 4,
    "trunk_dim": 32,
    "embed_dim": 16,
    "batch_size": 12,
    "epochs": 2,
    "margin": 0.4,
    "classifier_loss_weight": 0.5,
    "lrs": {"trunk": 1e-3, "embedder": 1e-3, "classifier": 2e-3},
}


def make_circulation(cfg):
    """Weekly-loan profiles: each genre has its own seasonal borrowing shape."""
    genres = torch.randint(0, cfg["n_genres"], (cfg["n_titles"],))
    weeks = torch.linspace(0, 6.28, cfg["n_features"])
    phase = genres.float().unsqueeze(1) * 1.3
    loans = torch.sin(weeks.unsqueeze(0) + phase) + 0.3 * torch.randn(cfg["n_titles"], cfg["n_features"])
    return loans, genres


class MLP(nn.Module):
    def __init__(self, layer_sizes, final_relu=False):
        super().__init__()
        layers = []
        n_relu = len(layer_sizes) - 1 if final_relu else len(layer_sizes) - 2
        for i in range(len(layer_sizes) - 1):
            if i <= n_relu:
                layers.append(nn.ReLU(inplace=True))
            layers.append(nn.Linear(layer_sizes[i], layer_sizes[i + 1]))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class LoanTrunk(nn.Module):
    def __init__(self, n_features, out_dim):
        super().__init__()
        self.conv = nn.Conv1d(1, 4, kernel_size=5, padding=2)
        self.fc = nn.Linear(4 * n_features, out_dim)

    def forward(self, loans):
        h = torch.tanh(self.conv(loans.unsqueeze(1)))
        return self.fc(h.flatten(1))


def contrastive_metric_loss(embeddings, labels, margin):
    emb = F.normalize(embeddings, dim=1)
    dist = torch.cdist(emb, emb)
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    eye = torch.eye(len(labels), dtype=torch.bool)
    pos = dist[same & ~eye]
    neg = F.relu(margin - dist[~same])
    return pos.pow(2).mean() + neg.pow(2).mean()


def train(cfg):
    loans, genres = make_circulation(cfg)
    trunk = LoanTrunk(cfg["n_features"], cfg["trunk_dim"])
    embedder = MLP([cfg["trunk_dim"], cfg["embed_dim"]])
    classifier = MLP([cfg["embed_dim"], cfg["n_genres"]])
    trunk_optimizer = torch.optim.Adam(trunk.parameters(), lr=cfg["lrs"]["trunk"])
    embedder_optimizer = torch.optim.Adam(embedder.parameters(), lr=cfg["lrs"]["embedder"])
    classifier_optimizer = torch.optim.Adam(classifier.parameters(), lr=cfg["lrs"]["classifier"])
    optimizers = [trunk_optimizer, embedder_optimizer, classifier_optimizer]

    for epoch in range(cfg["epochs"]):
        order = torch.randperm(cfg["n_titles"])
        for start in range(0, cfg["n_titles"], cfg["batch_size"]):
            idx = order[start:start + cfg["batch_size"]]
            embeddings = embedder(trunk(loans[idx]))
            metric_loss = contrastive_metric_loss(embeddings, genres[idx], cfg["margin"])
            logits = classifier(embeddings)
            classifier_loss = cfg["classifier_loss_weight"] * F.cross_entropy(logits, genres[idx])
            for opt in optimizers:
                opt.zero_grad()
            (metric_loss + classifier_loss).backward()
            for opt in optimizers:
                opt.step()
        print(f"epoch {epoch}: metric {metric_loss.item():.4f}, genre CE {classifier_loss.item():.4f}")


if __name__ == "__main__":
    train(CONFIG)
