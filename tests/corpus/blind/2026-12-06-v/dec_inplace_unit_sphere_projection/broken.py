"""Deep embedded clustering (IDEC) on the unit sphere: the embedding is normalised with ``/=`` before the soft assignment.

Source: https://github.com/huggingface/transformers/pull/24529

In OWL-ViT's forward the class embeddings and query embeddings were
L2-normalised in place, ``image_class_embeds /= torch.linalg.norm(image_class_embeds,
dim=-1, keepdim=True) + 1e-6``; fine-tuning the model then failed in
``backward()`` with "one of the variables needed for gradient computation has
been modified by an inplace operation" (issue #24525), because the norm (and
the layers that had already read the embedding) saved the tensor that ``/=``
overwrites.  The merged fix writes the division out of place.  The training
setting is the writer's: IDEC (DEC with the reconstruction loss kept) on
synthetic document embeddings, clustering in cosine geometry, so the encoder
output is projected on the unit sphere in the same in-place way before the
Student-t soft assignment; the target distribution is refreshed from the whole
data set every few iterations.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_DOCS, DIM, N_CLUSTERS, LATENT = 600, 30, 4, 8
PRETRAIN_STEPS = 8
DEC_ITERS = 40
BATCH = 100
UPDATE_INTERVAL = 10
GAMMA = 0.1


def make_documents():
    topics = F.normalize(torch.randn(N_CLUSTERS, DIM), dim=1) * 3.0
    labels = torch.randint(0, N_CLUSTERS, (N_DOCS,))
    x = topics[labels] + torch.randn(N_DOCS, DIM)
    return x, labels


class IDEC(nn.Module):
    def __init__(self, alpha=1.0):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(DIM, 64), nn.ReLU(), nn.Linear(64, LATENT))
        self.decoder = nn.Sequential(nn.Linear(LATENT, 64), nn.ReLU(), nn.Linear(64, DIM))
        self.centers = nn.Parameter(torch.zeros(N_CLUSTERS, LATENT))
        self.alpha = alpha

    def soft_assignment(self, z):
        # cosine geometry: embeddings and centers on the unit sphere
        z /= torch.linalg.norm(z, dim=-1, keepdim=True) + 1e-6
        mu = self.centers / (torch.linalg.norm(self.centers, dim=-1, keepdim=True) + 1e-6)
        dist2 = ((z.unsqueeze(1) - mu.unsqueeze(0)) ** 2).sum(dim=-1)
        q = (1.0 + dist2 / self.alpha) ** (-(self.alpha + 1.0) / 2.0)
        return q / q.sum(dim=1, keepdim=True)

    def forward(self, x):
        z = self.encoder(x)
        x_rec = self.decoder(z)
        q = self.soft_assignment(z)
        return x_rec, q


def target_distribution(q):
    weight = q ** 2 / q.sum(dim=0)
    return (weight.t() / weight.sum(dim=1)).t()


def spherical_kmeans(z, k, iters=10):
    z = F.normalize(z, dim=1)
    centers = z[torch.randperm(z.shape[0])[:k]].clone()
    for _ in range(iters):
        assign = (z @ centers.t()).argmax(dim=1)
        for j in range(k):
            members = z[assign == j]
            if len(members) > 0:
                centers[j] = F.normalize(members.mean(dim=0), dim=0)
    return centers


def cluster_accuracy(pred, labels):
    """Best one-to-one match by greedy assignment (enough for a progress print)."""
    hits = torch.zeros(N_CLUSTERS, N_CLUSTERS)
    for p, t in zip(pred.tolist(), labels.tolist()):
        hits[p, t] += 1
    total = 0.0
    for _ in range(N_CLUSTERS):
        i = int(hits.argmax())
        r, c = divmod(i, N_CLUSTERS)
        total += hits[r, c].item()
        hits[r, :] = -1
        hits[:, c] = -1
    return total / len(labels)


def main():
    x, labels = make_documents()
    model = IDEC()
    ae_opt = torch.optim.Adam(list(model.encoder.parameters()) + list(model.decoder.parameters()), lr=1e-2)
    dec_opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    # 1) autoencoder pretraining
    for step in range(PRETRAIN_STEPS):
        idx = torch.randint(0, N_DOCS, (BATCH,))
        recon_loss = F.mse_loss(model.decoder(model.encoder(x[idx])), x[idx])
        ae_opt.zero_grad()
        recon_loss.backward()
        ae_opt.step()

    # 2) cluster centers from spherical k-means on the embeddings
    with torch.no_grad():
        model.centers.copy_(spherical_kmeans(model.encoder(x), N_CLUSTERS))

    # 3) joint clustering + reconstruction, with a periodically refreshed target distribution
    p_all = None
    for it in range(DEC_ITERS):
        if it % UPDATE_INTERVAL == 0:
            with torch.no_grad():
                _, q_all = model(x)
                p_all = target_distribution(q_all)
            print(f"it {it:2d} cluster acc {cluster_accuracy(q_all.argmax(dim=1), labels):.3f}")
        idx = torch.randint(0, N_DOCS, (BATCH,))
        x_rec, q = model(x[idx])
        kl = F.kl_div(q.log(), p_all[idx], reduction="batchmean")
        loss = F.mse_loss(x_rec, x[idx]) + GAMMA * kl
        dec_opt.zero_grad()
        loss.backward()
        dec_opt.step()


if __name__ == "__main__":
    main()
