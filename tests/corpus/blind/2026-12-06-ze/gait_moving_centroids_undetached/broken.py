"""Cross-condition gait recognition with moving subject centroids (GaitSet-style backbone).

Report: https://github.com/EasonApolo/mstn/issues/4 -- MSTN's semantic alignment keeps moving
class centroids ``s_centroid = (1-decay) * self.s_centroid + decay * current_s_centroid`` and
stores them on the loss object for the next iteration; the maintainer explains the stored
centroid must be ``.detach()``-ed, otherwise "the computing graph will continuously grow as we
save last centroid and use it in the next epoch" and the next backward reaches the freed graph.
The training setting is the writer's: silhouette sequences of the same subjects walking in
normal clothes (NM) and in coats (CL), a frame CNN, set pooling over frames, horizontal pyramid
mapping, batch-all triplet loss, and a centroid alignment loss between the two conditions that
keeps one moving centroid per subject and condition -- without detaching them when stored.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_SUBJ, T, H, W = 8, 6, 16, 12
P, K = 4, 2                       # subjects per batch, sequences per subject and condition
BINS = (1, 2, 4)


class GaitNet(nn.Module):
    def __init__(self, ch=16, dim=16):
        super().__init__()
        self.frame_cnn = nn.Sequential(
            nn.Conv2d(1, ch, 3, padding=1), nn.LeakyReLU(0.1),
            nn.Conv2d(ch, ch, 3, padding=1), nn.LeakyReLU(0.1), nn.MaxPool2d(2),
        )
        self.hpm_fc = nn.Parameter(torch.randn(sum(BINS), ch, dim) * 0.1)

    def forward(self, seq):                       # seq: (B, T, H, W)
        b, t, h, w = seq.shape
        f = self.frame_cnn(seq.reshape(b * t, 1, h, w))
        f = f.reshape(b, t, *f.shape[1:]).max(1)[0]          # set pooling over frames
        strips = []
        for n in BINS:                                       # horizontal pyramid mapping
            z = f.reshape(b, f.shape[1], n, -1)
            strips.append(z.mean(-1) + z.max(-1)[0])
        z = torch.cat(strips, 2).permute(2, 0, 1)            # (strips, B, C)
        return z.matmul(self.hpm_fc).permute(1, 0, 2)        # (B, strips, dim)


def batch_all_triplet(emb, labels, margin=0.2):
    e = emb.permute(1, 0, 2)                                  # per strip
    d = torch.cdist(e, e)
    same = labels[:, None] == labels[None, :]
    ap = d.unsqueeze(3)
    an = d.unsqueeze(2)
    valid = (same.unsqueeze(2) & ~same.unsqueeze(1)).float()
    valid = valid * (1 - torch.eye(len(labels))).unsqueeze(2)
    l = F.relu(ap - an + margin) * valid
    return l.sum() / valid.sum().clamp(min=1)


class CentroidAligner:
    def __init__(self, dim, decay=0.3):
        self.decay = decay
        self.nm_centroid = torch.zeros(N_SUBJ, dim)
        self.cl_centroid = torch.zeros(N_SUBJ, dim)

    def __call__(self, emb_nm, emb_cl, ids):
        cur_nm = emb_nm.flatten(1).reshape(len(ids), K, -1).mean(1)
        cur_cl = emb_cl.flatten(1).reshape(len(ids), K, -1).mean(1)
        nm = self.nm_centroid.index_put((ids,), (1 - self.decay) * self.nm_centroid[ids] + self.decay * cur_nm)
        cl = self.cl_centroid.index_put((ids,), (1 - self.decay) * self.cl_centroid[ids] + self.decay * cur_cl)
        align_loss = F.mse_loss(nm[ids], cl[ids])
        self.nm_centroid = nm
        self.cl_centroid = cl
        return align_loss


def make_dataset():
    protos = (torch.rand(N_SUBJ, H, W) > 0.5).float()
    def seqs(coat):
        base = protos.unsqueeze(1).unsqueeze(1).expand(N_SUBJ, 4, T, H, W).clone()
        base = base + 0.3 * torch.randn_like(base)
        if coat:
            base[..., 4:10, :] += 0.8
        return base
    return seqs(False), seqs(True)


nm_data, cl_data = make_dataset()
model = GaitNet()
aligner = CentroidAligner(dim=sum(BINS) * 16)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for it in range(20):
    ids = torch.randperm(N_SUBJ)[:P]
    pick = torch.randint(0, 4, (P, K))
    x_nm = nm_data[ids.unsqueeze(1), pick].reshape(P * K, T, H, W)
    x_cl = cl_data[ids.unsqueeze(1), pick].reshape(P * K, T, H, W)
    labels = ids.repeat_interleave(K)
    emb_nm, emb_cl = model(x_nm), model(x_cl)
    triplet_loss = batch_all_triplet(torch.cat([emb_nm, emb_cl]), torch.cat([labels, labels]))
    align_loss = aligner(emb_nm, emb_cl, ids)
    loss = triplet_loss + 0.5 * align_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if it % 5 == 0:
        print(f"iter {it} triplet {triplet_loss.item():.4f} align {align_loss.item():.4f}")
