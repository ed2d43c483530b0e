"""Food-photo portion detection and calorie estimation, with detect-layer heatmaps plotted in training.

Source: https://github.com/XiaMooo/Yolo-Detect-Layer-Visualization/issues/1
"【SOLVED】Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."

The author used the repository's helper `plot_multi_heatmap(*arrays, cmap='viridis', ...)`
to draw the YOLO detect-layer outputs as heatmaps; inside it, `array = array.cpu().numpy()`
raised "Can't call numpy() on Tensor that requires grad". The author worked around it with
`numpy(force=True)`; the maintainer's answer explains that the detect-layer tensors record
gradients and the safe fix is `array = array.detach().cpu().numpy()`.

Reduction: a small grid detector over meal photos (one objectness map per food group on a
6x6 grid) with a calorie-regression head on the pooled features, trained with AdamW on
synthetic plates holding a few coloured food blobs whose areas set the calories. Every
`vis_every` steps the trainer passes the live detect-layer maps of the first plate to the
same kind of `plot_multi_heatmap` helper (matplotlib, Agg backend, nothing written to disk),
which calls `.cpu().numpy()` on tensors that still require grad.
"""
import numpy as np
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HPARAMS = {
    "n_plates": 48,
    "size": 48,
    "grid": 6,
    "food_groups": ["grain", "protein", "vegetable"],
    "kcal_per_pixel": [1.6, 2.4, 0.4],
    "batch_size": 12,
    "lr": 1e-3,
    "weight_decay": 1e-4,
    "epochs": 2,
    "vis_every": 2,
    "kcal_weight": 0.5,
}


def plot_multi_heatmap(*arrays, cmap="viridis", title=None, row=None, col=None):
    n = len(arrays)
    col = col or n
    row = row or (n + col - 1) // col
    fig, ax = plt.subplots(row, col, figsize=(2 * col, 2 * row))
    for i, array in enumerate(arrays):
        if isinstance(array, torch.Tensor):
            array = array.cpu().numpy()
        r, c = i // col, i % col
        axi = ax[r, c] if row > 1 else ax[c]
        axi.imshow(array, cmap=cmap, vmin=0.0, vmax=1.0)
        axi.set_xticks([])
        axi.set_yticks([])
    if title:
        fig.suptitle(title)
    peak = [float(np.max(a.get_array())) for a in fig.findobj(matplotlib.image.AxesImage)]
    plt.close(fig)
    return peak


class ConvBNAct(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class MealDetector(nn.Module):
    def __init__(self, n_groups):
        super().__init__()
        self.backbone = nn.Sequential(ConvBNAct(3, 16, 2), ConvBNAct(16, 32, 2), ConvBNAct(32, 32, 2))
        self.detect = nn.Conv2d(32, n_groups, 1)
        self.kcal_head = nn.Sequential(nn.Linear(32 + n_groups, 32), nn.SiLU(), nn.Linear(32, 1))

    def forward(self, x):
        feat = self.backbone(x)
        obj = torch.sigmoid(self.detect(feat))                    # (B, groups, g, g)
        pooled = torch.cat([feat.mean((2, 3)), obj.sum((2, 3))], 1)
        kcal = self.kcal_head(pooled).squeeze(1)
        return obj, kcal


def make_plates(hp):
    n, s, g = hp["n_plates"], hp["size"], hp["grid"]
    k = len(hp["food_groups"])
    colours = torch.tensor([[0.9, 0.8, 0.5], [0.6, 0.25, 0.2], [0.2, 0.7, 0.25]])
    yy, xx = torch.meshgrid(torch.arange(s).float(), torch.arange(s).float(), indexing="ij")
    images = 0.9 + 0.05 * torch.randn(n, 3, s, s)
    obj_t = torch.zeros(n, k, g, g)
    kcal = torch.zeros(n)
    for i in range(n):
        for grp in range(k):
            if torch.rand(()) < 0.75:
                cy, cx = (6 + torch.rand(2) * (s - 12)).tolist()
                r = 3 + float(torch.rand(())) * 5
                blob = (((yy - cy) ** 2 + (xx - cx) ** 2) <= r * r).float()
                images[i] = images[i] * (1 - blob) + colours[grp].view(3, 1, 1) * blob
                obj_t[i, grp, int(cy / s * g), int(cx / s * g)] = 1.0
                kcal[i] += hp["kcal_per_pixel"][grp] * blob.sum()
    return images, obj_t, kcal / 100.0


def main():
    torch.manual_seed(5)
    hp = HPARAMS
    images, obj_t, kcal_t = make_plates(hp)
    model = MealDetector(len(hp["food_groups"]))
    optimizer = torch.optim.AdamW(model.parameters(), lr=hp["lr"], weight_decay=hp["weight_decay"])
    bs, step = hp["batch_size"], 0
    for epoch in range(hp["epochs"]):
        model.train()
        for i in range(0, hp["n_plates"], bs):
            obj, kcal = model(images[i:i + bs])
            loss_obj = F.binary_cross_entropy(obj, obj_t[i:i + bs])
            loss_kcal = F.smooth_l1_loss(kcal, kcal_t[i:i + bs])
            loss = loss_obj + hp["kcal_weight"] * loss_kcal
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step % hp["vis_every"] == 0:
                peaks = plot_multi_heatmap(*obj[0], title=f"step {step}", row=1)
                print(f"step {step}: loss {loss.item():.4f}, heatmap peaks {np.round(peaks, 3)}")


if __name__ == "__main__":
    main()
