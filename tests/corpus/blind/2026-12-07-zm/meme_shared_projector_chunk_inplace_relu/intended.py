"""Multimodal sarcasm detection on memes: caption encoder + image encoder, a shared projector, fusion.

Reduced from paul007pl/VRCNet issue #33, https://github.com/paul007pl/VRCNet/issues/33 :
VRCNet encodes the partial and the complete point cloud in one batch, ``feat_x, feat_y =
feat.chunk(2)``, and feeds ``feat_x`` to ``Linear_ResBlock``, whose first op is
``self.af = nn.ReLU(inplace=True)`` applied to its input; training stops with "Output 0 of
SplitBackward0 is a view and is being modified inplace. This view is the output of a function
that returns multiple views." Here a meme-sarcasm model pushes caption and image features through
one shared projector as a single batch, chunks the result back into the two modalities and refines
each with the same style of residual block; the training setting is the writer's, the chunk
followed by an in-place ReLU inside the block is the report's.

Corrected: the block's ReLU out of place (``nn.ReLU()``), as VRCNet's other blocks have it; the
in-place ReLU also silently fed the shortcut a rectified input.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, SEQ, IMG, DIM = 200, 12, 32, 64


class ResBlock(nn.Module):
    """VRCNet-style residual MLP block: relu -> fc -> relu -> fc, plus a linear shortcut."""

    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.fc1 = nn.Linear(dim_in, dim_in)
        self.fc2 = nn.Linear(dim_in, dim_out)
        self.shortcut = nn.Linear(dim_in, dim_out)
        self.af = nn.ReLU()  # out of place: its input may be a chunk view, and the shortcut reads it

    def forward(self, feature):
        return self.fc2(self.af(self.fc1(self.af(feature)))) + self.shortcut(feature)


class CaptionEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM, padding_idx=0)
        self.gru = nn.GRU(DIM, DIM, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * DIM, DIM)

    def forward(self, tokens):
        h, _ = self.gru(self.emb(tokens))
        mask = (tokens != 0).float().unsqueeze(-1)
        return self.out((h * mask).sum(1) / mask.sum(1).clamp(min=1))


class ImageEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, DIM, 3, padding=1), nn.ReLU(),
        )

    def forward(self, img):
        return self.conv(img).mean(dim=(2, 3))


class SarcasmDetector(nn.Module):
    def __init__(self):
        super().__init__()
        self.text_encoder = CaptionEncoder()
        self.image_encoder = ImageEncoder()
        self.projector = nn.Sequential(nn.Linear(DIM, DIM), nn.LayerNorm(DIM))
        self.text_refine = ResBlock(DIM, DIM)
        self.image_refine = ResBlock(DIM, DIM)
        self.classifier = nn.Sequential(nn.Linear(3 * DIM, DIM), nn.ReLU(), nn.Linear(DIM, 1))

    def forward(self, tokens, img):
        t, v = self.text_encoder(tokens), self.image_encoder(img)
        z = self.projector(torch.cat([t, v], dim=0))       # one shared projection for both modalities
        z_t, z_v = z.chunk(2)
        z_t, z_v = self.text_refine(z_t), self.image_refine(z_v)
        fused = torch.cat([z_t, z_v, z_t * z_v], dim=1)     # incongruity term for sarcasm
        return self.classifier(fused).squeeze(1), z_t, z_v


def alignment_loss(z_t, z_v, temperature=0.1):
    z_t, z_v = F.normalize(z_t, dim=1), F.normalize(z_v, dim=1)
    logits = z_t @ z_v.t() / temperature
    target = torch.arange(len(z_t))
    return 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.t(), target))


def make_batch(n):
    lengths = torch.randint(4, SEQ + 1, (n,))
    tokens = torch.randint(1, VOCAB, (n, SEQ)) * (torch.arange(SEQ) < lengths.unsqueeze(1))
    return tokens, torch.rand(n, 3, IMG, IMG), torch.randint(0, 2, (n,)).float()


train_set = [make_batch(8) for _ in range(5)]
model = SarcasmDetector()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)
bce = nn.BCEWithLogitsLoss()

for epoch in range(2):
    for tokens, img, label in train_set:
        logit, z_t, z_v = model(tokens, img)
        cls_loss = bce(logit, label)
        align_loss = alignment_loss(z_t, z_v)
        optimizer.zero_grad()
        (cls_loss + 0.1 * align_loss).backward()
        optimizer.step()
    print(f"epoch {epoch}: cls {cls_loss.item():.4f} align {align_loss.item():.4f}")
