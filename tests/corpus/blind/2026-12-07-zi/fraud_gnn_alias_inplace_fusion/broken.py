"""Graph fraud detector: gated fusion added in place to a view of the account embedding.

Report: https://github.com/0215Arthur/HG-GNN/issues/11 ("one of the variables needed for
gradient computation has been modified by an inplace operation"). In HG-GNN's forward,
``seq_embeds = user_embeds.squeeze(1)`` is a view of the user embedding that the session-user
attention has already used, and ``seq_embeds += alpha * sess_vec + (1 - alpha) * sess_user``
writes the gated fusion into it in place; the maintainer's fix is the out-of-place
``seq_embeds = seq_embeds + (...)``. The training setting is the writer's: fraud detection on a
transaction graph with about 3 % fraudulent accounts, sampled neighbours per target account, an
account-to-neighbour attention, a sigmoid gate fusing the attention and mean-pool summaries into
the account's own embedding, and an alpha-balanced focal loss.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_ACC, FEAT, HID, K_NB, BATCH = 400, 16, 32, 8, 64

# synthetic transaction graph: fraud rings connect to each other more often
labels = (torch.rand(N_ACC) < 0.03).long()
features = torch.randn(N_ACC, FEAT) + 0.8 * labels[:, None].float() * torch.randn(1, FEAT)
adj_lists = []
fraud_ids = labels.nonzero().squeeze(1)
for a in range(N_ACC):
    nb = torch.randint(0, N_ACC, (12,))
    if labels[a] == 1 and len(fraud_ids) > 0:
        nb[:4] = fraud_ids[torch.randint(0, len(fraud_ids), (4,))]
    adj_lists.append(nb)


def sample_neighbours(batch_ids):
    picks = torch.randint(0, 12, (len(batch_ids), K_NB))
    return torch.stack([adj_lists[int(a)][p] for a, p in zip(batch_ids, picks)])


class FocalLoss(nn.Module):
    def __init__(self, alpha=0.9, gamma=2.0):
        super().__init__()
        self.alpha, self.gamma = alpha, gamma

    def forward(self, logits, target):
        p = torch.sigmoid(logits)
        ce = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
        p_t = p * target + (1 - p) * (1 - target)
        a_t = self.alpha * target + (1 - self.alpha) * (1 - target)
        return (a_t * (1 - p_t) ** self.gamma * ce).mean()


class FraudGNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.acc_enc = nn.Linear(FEAT, HID)
        self.nb_enc = nn.Linear(FEAT, HID)
        self.gate = nn.Linear(2 * HID, 1)
        self.cls = nn.Sequential(nn.Linear(HID, HID), nn.ReLU(), nn.Linear(HID, 1))

    def forward(self, x_acc, x_nb):
        acc_embeds = torch.tanh(self.acc_enc(x_acc)).unsqueeze(1)      # [B, 1, H]
        nb_embeds = torch.tanh(self.nb_enc(x_nb))                      # [B, K, H]
        att = torch.softmax(torch.bmm(acc_embeds, nb_embeds.transpose(1, 2)) / HID ** 0.5, -1)
        att_vec = torch.bmm(att, nb_embeds).squeeze(1)                 # [B, H]
        mean_vec = nb_embeds.mean(1)
        alpha = torch.sigmoid(self.gate(torch.cat([att_vec, mean_vec], 1)))
        h = acc_embeds.squeeze(1)
        h += alpha * att_vec + (1 - alpha) * mean_vec
        return self.cls(h).squeeze(-1)


model = FraudGNN()
criterion = FocalLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-5)

# oversample fraud in each batch (cost-sensitive sampling)
weights = torch.where(labels == 1, 10.0, 1.0)
for epoch in range(3):
    for it in range(4):
        batch_ids = torch.multinomial(weights, BATCH, replacement=True)
        nb_ids = sample_neighbours(batch_ids)
        logits = model(features[batch_ids], features[nb_ids])
        loss = criterion(logits, labels[batch_ids].float())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: focal loss {loss.item():.4f}")
