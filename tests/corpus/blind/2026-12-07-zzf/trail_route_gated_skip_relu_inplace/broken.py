"""Trail-running route difficulty from elevation profiles with a 1-D U-Net and gated skip connections.

Source: https://github.com/acrarshin/RPNet/pull/6 ("BUG:Fix_backward_loss_issue"). RPNet is a 1-D
U-Net over ECG signals; its issue #5 reported that the loss could not be backpropagated, and the pull
request, accepted by the author, explains that ``inplace=True`` on the ReLU prevented the backward
computation and sets it to ``False``.

Reduction: the training setting is the writer's (route difficulty for trail running). An elevation and
surface profile sampled every 25 m goes through a 1-D U-Net whose encoder blocks gate their skip
feature with a sigmoid attention map and pass the same feature, through an in-place ReLU, to the next
level. The in-place ReLU overwrites the convolution output the gating multiplication saved.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

CFG = {"length": 64, "channels": 3, "width": 16, "grades": 4, "batch": 10, "steps": 4, "lr": 3e-3}


class GatedEncoderBlock(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, 5, padding=2)
        self.gate = nn.Sequential(nn.Conv1d(c_out, 1, 1), nn.Sigmoid())
        self.act = nn.ReLU(inplace=True)
        self.pool = nn.MaxPool1d(2)

    def forward(self, x):
        h = self.conv(x)
        skip = h * self.gate(h)
        down = self.pool(self.act(h))
        return down, skip


class DecoderBlock(nn.Module):
    def __init__(self, c_in, c_skip, c_out):
        super().__init__()
        self.conv = nn.Conv1d(c_in + c_skip, c_out, 5, padding=2)

    def forward(self, x, skip):
        x = F.interpolate(x, size=skip.shape[-1], mode="linear", align_corners=False)
        return F.relu(self.conv(torch.cat([x, skip], dim=1)))


class RouteUNet(nn.Module):
    def __init__(self, channels, width, grades):
        super().__init__()
        self.enc1 = GatedEncoderBlock(channels, width)
        self.enc2 = GatedEncoderBlock(width, width * 2)
        self.bottleneck = nn.Conv1d(width * 2, width * 2, 3, padding=1)
        self.dec2 = DecoderBlock(width * 2, width * 2, width)
        self.dec1 = DecoderBlock(width, width, width)
        self.segment_head = nn.Conv1d(width, 1, 1)
        self.grade_head = nn.Linear(width * 2, grades)

    def forward(self, profile):
        x, s1 = self.enc1(profile)
        x, s2 = self.enc2(x)
        x = F.relu(self.bottleneck(x))
        grade_logits = self.grade_head(x.mean(dim=-1))
        x = self.dec1(self.dec2(x, s2), s1)
        return self.segment_head(x).squeeze(1), grade_logits


def synthetic_routes(n, cfg):
    """Elevation (random walk), technicality of the surface, and the distance channel; targets derived."""
    L = cfg["length"]
    climb = torch.cumsum(torch.randn(n, L) * 4.0, dim=1)
    surface = torch.rand(n, L).round() * torch.rand(n, 1)
    distance = torch.linspace(0, 1, L).expand(n, L)
    gradient = F.pad(climb[:, 1:] - climb[:, :-1], (1, 0))
    segment_effort = 0.05 * gradient.abs() + surface
    totals = segment_effort.sum(dim=1)
    edges = torch.quantile(totals, torch.tensor([0.25, 0.5, 0.75]))
    grade = torch.bucketize(totals, edges)
    profile = torch.stack([(climb - climb.mean(1, keepdim=True)) / 20.0, surface, distance], dim=1)
    return profile, segment_effort, grade


def train_step(model, optimizer, batch):
    profile, effort, grade = batch
    optimizer.zero_grad()
    effort_pred, grade_logits = model(profile)
    segment_loss = F.smooth_l1_loss(effort_pred, effort)
    grade_loss = F.cross_entropy(grade_logits, grade)
    (segment_loss + 0.5 * grade_loss).backward()
    optimizer.step()
    return segment_loss.item(), grade_loss.item()


def main():
    torch.manual_seed(21)
    model = RouteUNet(CFG["channels"], CFG["width"], CFG["grades"])
    optimizer = torch.optim.Adam(model.parameters(), lr=CFG["lr"])
    for step in range(CFG["steps"]):
        seg, grd = train_step(model, optimizer, synthetic_routes(CFG["batch"], CFG))
        print(f"step {step}: segment {seg:.4f} grade {grd:.4f}")


if __name__ == "__main__":
    main()
