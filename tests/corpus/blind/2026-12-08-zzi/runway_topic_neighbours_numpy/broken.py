"""Dynamic embedded topic model of fashion-week runway reviews, with per-epoch topic visualisation.

Reduced from adjidieng/DETM pull request #11, "bug: RuntimeError, Can't call numpy() on Variable
that requires grad." (https://github.com/adjidieng/DETM/pull/11). DETM's `main.py` trains the
dynamic embedded topic model and, every few epochs, calls `visualize()`: inside
`with torch.no_grad():` it prints the top words of each topic at a few time slices and the nearest
neighbours of query words, where `utils.nearest_neighbors` does `embeddings.cpu().numpy()` on
`model.rho.weight`. `torch.no_grad()` does not change a parameter's `requires_grad` (and `.cpu()`
of a CPU tensor is the tensor itself), so the call fails with "Can't call numpy() on Variable that
requires grad. Use var.detach().numpy() instead." The PR's fix is the one the message names:
`.detach()` before `.numpy()`.

Reduction: the same model shape (word embeddings rho, per-time topic embeddings mu_q_alpha, an
amortised theta encoder, beta_t = softmax(alpha_t rho^T), NELBO = reconstruction + KL(theta))
trained with Adam on bag-of-words vectors of runway reviews from six fashion-week seasons. After
the first epoch, `visualize()` prints topic words (fine: beta is computed under no_grad) and then
fails on the nearest-neighbour lookup of "denim" in the word-embedding matrix. Current PyTorch
lets `.numpy()` through inside `no_grad()` (the DETM code failed there under the PyTorch of its
time), so here the neighbour report sits after the `no_grad()` block, where it fails today the
way the report's did.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(31)

VOCAB = ["denim", "linen", "silk", "wool", "leather", "sequin", "tailoring", "oversized",
         "pleat", "drape", "neon", "pastel", "monochrome", "floral", "utility", "knit",
         "sheer", "corset", "trench", "cargo", "minimal", "maximal", "vintage", "upcycled"]

HPARAMS = {
    "topics": 4,
    "seasons": 6,
    "emb": 16,
    "theta_hidden": 32,
    "docs": 48,
    "batch_size": 24,
    "epochs": 3,
    "lr": 5e-3,
    "visualize_every": 1,
    "num_words": 4,
    "queries": ["denim", "sequin", "upcycled"],
}


class RunwayDETM(nn.Module):
    def __init__(self, vocab_size, hp):
        super().__init__()
        self.rho = nn.Linear(hp["emb"], vocab_size, bias=False)            # word embeddings
        self.mu_q_alpha = nn.Parameter(0.1 * torch.randn(hp["topics"], hp["seasons"], hp["emb"]))
        self.q_theta = nn.Sequential(
            nn.Linear(vocab_size + hp["topics"], hp["theta_hidden"]), nn.ReLU(),
            nn.Linear(hp["theta_hidden"], 2 * hp["topics"]))
        self.topics = hp["topics"]

    def get_beta(self, alpha):
        # alpha: topics x seasons x emb  ->  beta: topics x seasons x vocab
        return F.softmax(self.rho(alpha), dim=-1)

    def get_theta(self, bows, eta):
        mu, logsigma = self.q_theta(torch.cat([bows, eta], dim=1)).chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * logsigma.exp()
        kl = -0.5 * (1 + 2 * logsigma - mu.pow(2) - (2 * logsigma).exp()).sum(dim=1)
        return F.softmax(z, dim=1), kl

    def forward(self, bows, seasons, eta):
        theta, kl_theta = self.get_theta(bows / bows.sum(1, keepdim=True), eta)
        beta = self.get_beta(self.mu_q_alpha)[:, seasons].permute(1, 0, 2)  # docs x topics x vocab
        probs = torch.bmm(theta.unsqueeze(1), beta).squeeze(1)
        nll = -(torch.log(probs + 1e-6) * bows).sum(1)
        return (nll + kl_theta).mean()


def nearest_neighbors(word, embeddings, vocab, num_words):
    vectors = embeddings.cpu().numpy()
    query = vectors[vocab.index(word)]
    ranks = vectors.dot(query) / np.sqrt(query.dot(query) * np.sum(vectors ** 2, 1))
    return [vocab[i] for i in ranks.argsort()[::-1][:num_words]]


def visualize(model, hp):
    model.eval()
    with torch.no_grad():
        beta = model.get_beta(model.mu_q_alpha)
        for k in range(hp["topics"]):
            for t in (0, hp["seasons"] - 1):
                gamma = beta[k, t, :]
                top_words = list(gamma.cpu().numpy().argsort()[-hp["num_words"]:][::-1])
                print(f"topic {k} season {t}: {[VOCAB[w] for w in top_words]}")
    print("Visualize word embeddings ...")
    embeddings = model.rho.weight          # vocab x emb
    for word in hp["queries"]:
        print(f"{word}: {nearest_neighbors(word, embeddings, VOCAB, hp['num_words'])}")
    model.train()


def runway_corpus(n, vocab_size, seasons):
    season_of_doc = torch.randint(0, seasons, (n,))
    trend = torch.rand(seasons, vocab_size) ** 3
    rates = 0.3 + 4 * trend[season_of_doc]
    bows = torch.poisson(rates)
    bows[:, 0] += 1.0
    return bows, season_of_doc


def main():
    hp = HPARAMS
    bows, seasons = runway_corpus(hp["docs"], len(VOCAB), hp["seasons"])
    model = RunwayDETM(len(VOCAB), hp)
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])
    eta = torch.zeros(hp["batch_size"], hp["topics"])
    for epoch in range(hp["epochs"]):
        acc = 0.0
        for start in range(0, hp["docs"], hp["batch_size"]):
            loss = model(bows[start:start + hp["batch_size"]], seasons[start:start + hp["batch_size"]], eta)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            acc += loss.item()
        print(f"epoch {epoch}: NELBO {acc:.2f}")
        if epoch % hp["visualize_every"] == 0:
            visualize(model, hp)


if __name__ == "__main__":
    main()
