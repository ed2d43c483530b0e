"""Lip reading: a learned mouth crop, a 3-D convolutional front end, a GRU and a CTC loss.

Source: https://github.com/paarthneekhara/AdversarialDeepFakes/issues/23 -- the author ran the
repository's attack, whose differentiable pipeline passes an image that requires grad through a
torchvision-style ``Normalize`` transform. The transform normalises channel by channel with
``for t, m, s in zip(tensor, mean, std): t.sub_(m).div_(s)``, and it failed with "Output 0 of
UnbindBackward is a view and is being modified inplace. This view is the output of a function that
returns multiple views". Iterating over a tensor unbinds it; the fix is an out-of-place
normalisation. Here the same hand-written transform normalises the mouth crops that a spatial
transformer cuts out of the face clip, so the crops are part of the graph. The training setting is
the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB = 12  # blank + 11 visemes
T, H, W, CROP = 8, 24, 24, 12


class Normalize:
    """Channel-wise normalisation, written like torchvision's tensor transform."""

    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, clip):  # clip: (C, T, H, W)
        mean = torch.tensor(self.mean).view(-1, 1, 1, 1)
        std = torch.tensor(self.std).view(-1, 1, 1, 1)
        return (clip - mean) / std


class MouthCropper(nn.Module):
    """Spatial transformer that predicts one affine crop per clip from the mean frame."""

    def __init__(self):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(3, 8, 5, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                 nn.Flatten(), nn.Linear(8, 6))
        nn.init.zeros_(self.loc[-1].weight)
        with torch.no_grad():
            self.loc[-1].bias.copy_(torch.tensor([0.5, 0, 0, 0, 0.5, 0.3]))

    def forward(self, clips):  # (B, C, T, H, W)
        b = clips.shape[0]
        theta = self.loc(clips.mean(2)).view(b, 2, 3)
        frames = clips.permute(0, 2, 1, 3, 4).reshape(b * T, 3, H, W)
        grid = F.affine_grid(theta.repeat_interleave(T, 0), (b * T, 3, CROP, CROP), align_corners=False)
        crops = F.grid_sample(frames, grid, align_corners=False)
        return crops.view(b, T, 3, CROP, CROP).permute(0, 2, 1, 3, 4)


class LipReader(nn.Module):
    def __init__(self):
        super().__init__()
        self.frontend = nn.Sequential(nn.Conv3d(3, 16, (3, 5, 5), padding=(1, 2, 2)), nn.BatchNorm3d(16),
                                      nn.ReLU(), nn.MaxPool3d((1, 2, 2)))
        self.gru = nn.GRU(16 * (CROP // 2) ** 2, 32, batch_first=True, bidirectional=True)
        self.out = nn.Linear(64, VOCAB)

    def forward(self, crops):
        x = self.frontend(crops)  # (B, 16, T, 6, 6)
        x = x.permute(0, 2, 1, 3, 4).flatten(2)
        x, _ = self.gru(x)
        return self.out(x).log_softmax(-1)  # (B, T, V)


normalize = Normalize(mean=[0.42, 0.31, 0.28], std=[0.22, 0.19, 0.18])
cropper, reader = MouthCropper(), LipReader()
optimizer = torch.optim.Adam(list(cropper.parameters()) + list(reader.parameters()), lr=3e-4)
ctc = nn.CTCLoss(blank=0, zero_infinity=True)

for step in range(4):
    clips = torch.rand(2, 3, T, H, W)
    targets = torch.randint(1, VOCAB, (2, 4))
    crops = cropper(clips)
    crops = torch.stack([normalize(c) for c in crops])
    log_probs = reader(crops)
    loss = ctc(log_probs.transpose(0, 1), targets, torch.full((2,), T), torch.full((2,), 4))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} ctc {loss.item():.4f}")
