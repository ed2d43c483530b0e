"""Image retrieval with a cross-batch memory (XBM), reduced from a public report.

Source: https://github.com/qdrant/quaterion/issues/181 ("Inplace computation error with XBM").
The author fine-tunes an image encoder for similarity search (CIFAR-100 style groups) with a
triplet loss, and enables quaterion's cross-batch memory: after ``start_iteration`` the loss of
each batch also mines triplets against the embeddings of earlier batches, kept in a ring buffer.
The trainer is Lightning-style: ``training_step`` returns the loss and the loop calls
``backward`` on it afterwards. Synthetic 3x16x16 images, CPU.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

EMBEDDING_SIZE = 16
NUM_GROUPS = 8
BATCH_SIZE = 16


class Encoder(nn.Module):
    def __init__(self, embedding_size=EMBEDDING_SIZE):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.head = nn.Linear(16, embedding_size)

    def forward(self, images):
        return self.head(self.backbone(images))


class XbmBuffer:
    """A ring buffer holding the most recent embeddings and their group ids."""

    def __init__(self, buffer_size, embedding_size):
        self.buffer_size = buffer_size
        self._embeddings = torch.zeros(buffer_size, embedding_size)
        self._targets = torch.zeros(buffer_size, dtype=torch.long)
        self._pointer = 0
        self.is_full = False

    def get(self):
        if self.is_full:
            return self._embeddings.clone(), self._targets.clone()
        return self._embeddings[: self._pointer].clone(), self._targets[: self._pointer].clone()

    def queue(self, embeddings, targets):
        batch_size = len(targets)
        end = self._pointer + batch_size
        if end >= self.buffer_size:
            excess = end - self.buffer_size
            self._embeddings[self._pointer :] = embeddings[: batch_size - excess]
            self._targets[self._pointer :] = targets[: batch_size - excess]
            self._embeddings[:excess] = embeddings[batch_size - excess :]
            self._targets[:excess] = targets[batch_size - excess :]
            self._pointer = excess
            self.is_full = True
        else:
            self._embeddings[self._pointer : end] = embeddings
            self._targets[self._pointer : end] = targets
            self._pointer = end


def euclidean_distance_matrix(x, y):
    dot_product = torch.mm(x, y.transpose(0, 1))
    x_square_norm = (x * x).sum(dim=1)
    y_square_norm = (y * y).sum(dim=1)
    distances = x_square_norm.unsqueeze(1) - 2.0 * dot_product + y_square_norm.unsqueeze(0)
    distances = F.relu(distances)
    # keep sqrt differentiable where a distance is exactly zero
    mask = (distances == 0.0).float()
    distances = torch.sqrt(distances + mask * 1e-16)
    return distances * (1.0 - mask)


class TripletLoss(nn.Module):
    """Batch-hard triplet loss over groups, with an XBM variant against memory embeddings."""

    def __init__(self, margin=1.0):
        super().__init__()
        self.margin = margin

    def _hard_triplet_loss(self, anchors, anchor_groups, others, other_groups, same_set):
        dists = euclidean_distance_matrix(anchors, others)
        positive = anchor_groups[:, None] == other_groups[None, :]
        if same_set:
            positive = positive & ~torch.eye(len(anchors), dtype=torch.bool)
        negative = anchor_groups[:, None] != other_groups[None, :]
        hardest_positive = (dists * positive.float()).max(dim=1).values
        hardest_negative = (dists + 1e6 * (~negative).float()).min(dim=1).values
        return F.relu(hardest_positive - hardest_negative + self.margin).mean()

    def forward(self, embeddings, groups):
        return self._hard_triplet_loss(embeddings, groups, embeddings, groups, same_set=True)

    def xbm_loss(self, embeddings, groups, memory_embeddings, memory_groups):
        if len(memory_groups) == 0:
            return embeddings.new_zeros(())
        return self._hard_triplet_loss(embeddings, groups, memory_embeddings, memory_groups, same_set=False)


class SimilarityModel:
    def __init__(self, xbm_start_iteration=0, xbm_weight=1.0, xbm_buffer_size=40):
        self.model = Encoder()
        self.loss = TripletLoss(margin=1.0)
        self.xbm_buffer = XbmBuffer(xbm_buffer_size, EMBEDDING_SIZE)
        self.xbm_start_iteration = xbm_start_iteration
        self.xbm_weight = xbm_weight
        self.global_step = 0

    def configure_optimizers(self):
        return torch.optim.Adam(self.model.parameters(), lr=1e-3)

    def training_step(self, batch):
        images, groups = batch
        embeddings = self.model(images)
        loss = self.loss(embeddings, groups)
        if self.global_step > self.xbm_start_iteration:
            memory_embeddings, memory_groups = self.xbm_buffer.get()
            memory_loss = self.loss.xbm_loss(embeddings, groups, memory_embeddings, memory_groups)
            loss = loss + self.xbm_weight * memory_loss
            self.xbm_buffer.queue(embeddings.detach(), groups.detach())
        return loss


def make_batches(num_batches):
    prototypes = torch.randn(NUM_GROUPS, 3, 16, 16)
    batches = []
    for _ in range(num_batches):
        groups = torch.randint(0, NUM_GROUPS, (BATCH_SIZE,))
        images = prototypes[groups] + 0.5 * torch.randn(BATCH_SIZE, 3, 16, 16)
        batches.append((images, groups))
    return batches


def fit(module, batches, epochs=2):
    optimizer = module.configure_optimizers()
    for epoch in range(epochs):
        for batch in batches:
            optimizer.zero_grad()
            loss = module.training_step(batch)
            loss.backward()
            optimizer.step()
            module.global_step += 1
        print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    batches = make_batches(4)
    fit(SimilarityModel(), batches)
