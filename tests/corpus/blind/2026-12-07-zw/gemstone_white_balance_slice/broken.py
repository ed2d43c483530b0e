"""Gemstone appraisal: price and colour grade from a stone photo, white-balanced by a reference-card crop.

Source: https://github.com/pytorch/pytorch/issues/55980. The author ran one conv over two inputs, flattened
the second output into a gain vector and scaled a slice of the first output by it. Written as
``x[0, :, 0, 0] *= var`` it trained; rewritten as ``x[0, :, 0, 0] = x[0, :, 0, 0] * var`` backward failed
with "modified by an inplace operation". The maintainer's answer: the multiplication saves
``x[0, :, 0, 0]`` for backward, and the assignment then overwrites that very slice; the fix is to clone the
slice before multiplying (or to build the result out of place).

Reduction: the report is a toy two-input conv; the training setting is the writer's. One shared conv stem
encodes the gem photo and the grey reference card photographed next to it; the card's pooled response is a
per-channel gain that corrects the colour channels of the gem's feature map before the heads regress
log-price per carat and classify the colour grade.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

HP = {"img": 24, "stem_channels": 16, "wb_channels": 6, "n_grades": 5, "batch": 24, "iters": 5, "lr": 2e-3}


def appraisal_batch(batch, img, n_grades):
    """Photos of stones under varying light casts, the card under the same cast, price and grade labels."""
    grade = torch.randint(0, n_grades, (batch,))
    carat = 0.3 + 2.0 * torch.rand(batch)
    hue = torch.stack([1.0 - 0.15 * grade, 0.9 - 0.05 * grade, 0.6 + 0.1 * grade], dim=1).float()
    cast = 0.7 + 0.6 * torch.rand(batch, 3)
    gem = (hue * cast)[:, :, None, None] * torch.rand(batch, 3, img, img) + 0.05 * torch.randn(batch, 3, img, img)
    card = cast[:, :, None, None] * torch.ones(batch, 3, img, img) + 0.02 * torch.randn(batch, 3, img, img)
    log_ppc = 7.0 + 0.8 * carat - 0.3 * grade.float() + 0.1 * torch.randn(batch)
    return gem, card, grade, log_ppc.unsqueeze(1), carat.unsqueeze(1)


class SharedStem(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(3, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, stride=2)

    def forward(self, x):
        return self.conv2(F.relu(self.conv1(x)))


class AppraisalHead(nn.Module):
    def __init__(self, channels, n_grades):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.price = nn.Sequential(nn.Linear(channels + 1, 32), nn.ReLU(), nn.Linear(32, 1))
        self.grade = nn.Linear(channels, n_grades)

    def forward(self, fmap, carat):
        v = self.pool(F.relu(fmap)).flatten(1)
        return self.price(torch.cat([v, carat], dim=1)), self.grade(v)


def white_balance(fmap, card_map, k):
    gain = 1.0 + torch.tanh(card_map.mean(dim=(2, 3))[:, :k])
    fmap[:, :k] = fmap[:, :k] * gain[:, :, None, None]
    return fmap


def train_step(stem, head, optimizer, batch, k):
    gem, card, grade, log_ppc, carat = batch
    fmap = stem(gem)
    card_map = stem(card)
    fmap = white_balance(fmap, card_map, k)
    price_pred, grade_logits = head(fmap, carat)
    appraisal_loss = F.mse_loss(price_pred, log_ppc) + 0.5 * F.cross_entropy(grade_logits, grade)

    optimizer.zero_grad()
    appraisal_loss.backward()
    optimizer.step()
    return appraisal_loss.item()


def main():
    stem = SharedStem(HP["stem_channels"])
    head = AppraisalHead(HP["stem_channels"], HP["n_grades"])
    optimizer = torch.optim.Adam(list(stem.parameters()) + list(head.parameters()), lr=HP["lr"])
    for it in range(HP["iters"]):
        batch = appraisal_batch(HP["batch"], HP["img"], HP["n_grades"])
        loss_value = train_step(stem, head, optimizer, batch, HP["wb_channels"])
        print(f"iter {it}: appraisal loss {loss_value:.3f}")


if __name__ == "__main__":
    main()
