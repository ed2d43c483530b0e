"""Retinal layer segmentation of macular OCT B-scans with a HarDNet-style net built on CatConv2d.

Source: https://github.com/PingoLH/FCHarDNet/issues/61
"RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place
operation- Using own dataset"

The author ran FCHarDNet's `test.py` on their own data. That script checks the repository's
`CatConv2d` (a convolution applied to a list of feature maps without materialising their
concatenation) against a plain `nn.Conv2d` on the concatenated input by giving both modules the
same weights with `cconv.weight[:,:,:,:] = W[:,:,:,:]` and `conv.weight[:,:,:,:] = ...`. Those
slice assignments write into a view of a parameter (a leaf that requires grad) with autograd
recording, which raises the error above. The assignment is meant as a plain weight copy, not
part of any graph: done under `torch.no_grad()` (or with `.copy_` under no_grad) it works.

Reduction: a small FC-HarDNet-like encoder-decoder whose harmonic blocks use CatConv2d on lists
of earlier layer outputs, segmenting synthetic OCT B-scans into vitreous, four retinal bands
and choroid. After each epoch the trainer runs the repository's equivalence check: it builds a
reference `nn.Conv2d`, copies a trained CatConv2d's weight and bias into it by slice
assignment, and compares outputs. The first epoch's Adam steps run; the check fails.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

HPARAMS = {
    "n_scans": 16,
    "height": 48,
    "width": 48,
    "n_classes": 6,
    "batch_size": 8,
    "lr": 2e-3,
    "epochs": 2,
    "growth": 8,
}


class CatConv2d(nn.Module):
    """Conv2d over a list of inputs, equivalent to conv(torch.cat(xs, 1)) without the concat."""

    def __init__(self, in_channels, out_channels, kernel_size, relu=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, *kernel_size))
        self.bias = nn.Parameter(torch.zeros(out_channels))
        nn.init.kaiming_uniform_(self.weight, a=5 ** 0.5)
        self.relu = relu
        self.padding = kernel_size[0] // 2

    def forward(self, xs):
        out, start = None, 0
        for x in xs:
            w = self.weight[:, start:start + x.shape[1]]
            y = F.conv2d(x, w, padding=self.padding)
            out = y if out is None else out + y
            start += x.shape[1]
        out = out + self.bias.view(1, -1, 1, 1)
        return F.relu(out) if self.relu else out


class HarDBlock(nn.Module):
    """Layer k takes the outputs of layers k - 2**i (harmonic links)."""

    def __init__(self, in_ch, growth, n_layers):
        super().__init__()
        self.links, self.layers = [], nn.ModuleList()
        chans = [in_ch]
        for k in range(1, n_layers + 1):
            link = [k - 2 ** i for i in range(k.bit_length()) if k % (2 ** i) == 0 and k - 2 ** i >= 0]
            self.links.append(link)
            self.layers.append(CatConv2d(sum(chans[j] for j in link), growth, (3, 3)))
            chans.append(growth)
        self.out_channels = sum(chans[1:]) + 0

    def forward(self, x):
        outs = [x]
        for link, layer in zip(self.links, self.layers):
            outs.append(layer([outs[j] for j in link]))
        return torch.cat(outs[1:], 1)


class FCHarDNetLite(nn.Module):
    def __init__(self, n_classes, growth):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.enc1 = HarDBlock(16, growth, 4)
        self.down = nn.AvgPool2d(2)
        self.enc2 = HarDBlock(self.enc1.out_channels, growth, 4)
        self.fuse = CatConv2d(self.enc1.out_channels + self.enc2.out_channels, 32, (3, 3))
        self.head = nn.Conv2d(32, n_classes, 1)

    def forward(self, x):
        s = self.stem(x)
        e1 = self.enc1(s)
        e2 = self.enc2(self.down(e1))
        up = F.interpolate(e2, size=e1.shape[-2:], mode="bilinear", align_corners=False)
        return self.head(self.fuse([e1, up]))


def make_bscans(hp):
    """Depth boundaries that undulate across the scan (foveal pit in the middle)."""
    n, h, w, c = hp["n_scans"], hp["height"], hp["width"], hp["n_classes"]
    xs = torch.linspace(-1, 1, w)
    depth = torch.arange(h).float().view(1, h, 1)
    base = torch.tensor([10.0, 16.0, 22.0, 28.0, 34.0]).view(1, -1, 1)
    pit = -4.0 * torch.exp(-(xs / 0.25) ** 2)
    shift = torch.randn(n, 1, 1) * 2 + torch.randn(n, 1, 1) * xs.view(1, 1, -1) * 2
    bounds = base + shift + pit.view(1, 1, -1) * torch.tensor([1.0, 1.0, 0.6, 0.2, 0.0]).view(1, -1, 1)
    labels = (depth.unsqueeze(1) >= bounds.unsqueeze(2)).sum(1)           # (n, h, w) in 0..5
    brightness = torch.tensor([0.05, 0.8, 0.35, 0.6, 0.25, 0.9])[:c]
    images = brightness[labels] + 0.1 * torch.randn(n, h, w)
    return images.unsqueeze(1), labels


def check_catconv_equivalence(cconv, inputs):
    """As in FCHarDNet's test.py: give a plain Conv2d the same weights and compare outputs."""
    out_ch, in_ch = cconv.weight.shape[:2]
    conv = nn.Conv2d(in_ch, out_ch, kernel_size=3, stride=1, bias=True, padding=1)
    with torch.no_grad():
        conv.weight[:, :, :, :] = cconv.weight[:, :, :, :]
        conv.bias[:] = cconv.bias[:]
        out = cconv(inputs)
        out2 = F.relu(conv(torch.cat(inputs, 1)))
    return (out - out2).abs().max().item()


def main():
    torch.manual_seed(11)
    hp = HPARAMS
    images, labels = make_bscans(hp)
    model = FCHarDNetLite(hp["n_classes"], hp["growth"])
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])
    probe = [torch.randn(2, model.enc1.out_channels, 12, 12), torch.randn(2, model.enc2.out_channels, 12, 12)]
    bs = hp["batch_size"]
    for epoch in range(hp["epochs"]):
        model.train()
        running = 0.0
        for i in range(0, hp["n_scans"], bs):
            logits = model(images[i:i + bs])
            loss = F.cross_entropy(logits, labels[i:i + bs])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running += loss.item()
        diff = check_catconv_equivalence(model.fuse, probe)
        print(f"epoch {epoch}: loss {running / (hp['n_scans'] // bs):.4f}, catconv max diff {diff:.2e}")


if __name__ == "__main__":
    main()
