"""Kelp canopy mapping: per-pixel canopy cover from multispectral patches, trained across survey sites.

Source: https://github.com/huggingface/pytorch-image-models/issues/265 ("RuntimeError: One of
the differentiated Tensors appears to not have been used in the graph"). The author runs the
AND-mask training of "Learning explanations that are hard to vary": the batch is split into
environments, ``torch.autograd.grad(env_loss, params, retain_graph=True)`` is taken per
environment over the model's parameters, and the per-environment gradients are combined.
With timm's hybrid ``vit_small_resnet18d_224`` this raises the unused-tensor error, while a
plain torchvision resnet18 works. The writer's reduction: a hybrid model whose CNN backbone
still carries its own classification head, which the hybrid's forward never calls (it only
uses the backbone's feature maps), and per-site gradients taken over all of
``model.parameters()``; the agreement mask is then applied to the gradient of the summed
loss before the step. Patches (bands: blue, green, red, NIR, SWIR) and canopy masks from
three sites are synthetic.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

OPTS = {"n_sites": 3, "per_site": 8, "bands": 5, "size": 16, "width": 16, "tokens_dim": 24, "agreement": 1.0, "lr": 1e-3, "iters": 6}


class ConvBackbone(nn.Module):
    def __init__(self, bands, width, n_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(bands, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU())
        self.stage = nn.Sequential(nn.Conv2d(width, width, 3, stride=2, padding=1), nn.ReLU())
        self.fc = nn.Linear(width, n_classes)

    def forward_features(self, x):
        return self.stage(self.stem(x))

    def forward(self, x):
        return self.fc(self.forward_features(x).mean(dim=(2, 3)))


class HybridCanopyNet(nn.Module):
    def __init__(self, bands, width, dim):
        super().__init__()
        self.backbone = ConvBackbone(bands, width)
        self.patch_proj = nn.Conv2d(width, dim, 1)
        self.mixer = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=2 * dim, batch_first=True)
        self.decoder = nn.Linear(dim, 4)

    def forward(self, x):
        feats = self.patch_proj(self.backbone.forward_features(x))
        b, d, h, w = feats.shape
        tokens = self.mixer(feats.flatten(2).transpose(1, 2))
        logits = self.decoder(tokens).transpose(1, 2).reshape(b, 2, 2, h, w)
        logits = logits.permute(0, 3, 1, 4, 2).reshape(b, 2 * h, 2 * w)
        return logits


def synth_sites(o):
    xs, ys = [], []
    for site in range(o["n_sites"]):
        x = torch.randn(o["per_site"], o["bands"], o["size"], o["size"]) + 0.3 * site
        ndvi = (x[:, 3] - x[:, 2]) / (x[:, 3].abs() + x[:, 2].abs() + 1.0)
        ys.append((ndvi > 0.05 * site).float())
        xs.append(x)
    return torch.cat(xs), torch.cat(ys)


def trainable_parameters(model):
    return [p for p in model.parameters() if p.requires_grad]


def fill_unused(grads, params):
    return [torch.zeros_like(p) if g is None else g for g, p in zip(grads, params)]


def apply_agreement(params, masks):
    for p, m in zip(params, masks):
        if p.grad is not None:
            p.grad.mul_(m)


def and_mask_step(canopy_net, opt, x, y, o):
    params = trainable_parameters(canopy_net)
    logits = canopy_net(x)
    site_logits = logits.view(o["n_sites"], o["per_site"], -1)
    site_targets = y.view(o["n_sites"], o["per_site"], -1)
    site_grads = [[] for _ in params]
    total_loss = 0.0
    for env_logits, env_targets in zip(site_logits, site_targets):
        env_loss = F.binary_cross_entropy_with_logits(env_logits, env_targets)
        total_loss = total_loss + env_loss
        grads = torch.autograd.grad(env_loss, params, retain_graph=True, allow_unused=True)
        for bucket, g in zip(site_grads, fill_unused(grads, params)):
            bucket.append(g)
    masks = []
    for bucket in site_grads:
        signs = torch.stack([torch.sign(g) for g in bucket])
        masks.append((signs.mean(dim=0).abs() >= o["agreement"]).float())
    opt.zero_grad()
    total_loss.backward()
    apply_agreement(params, masks)
    opt.step()
    return total_loss.item()


def main():
    torch.manual_seed(8)
    x, y = synth_sites(OPTS)
    canopy_net = HybridCanopyNet(OPTS["bands"], OPTS["width"], OPTS["tokens_dim"])
    opt = torch.optim.Adam(canopy_net.parameters(), lr=OPTS["lr"])
    for it in range(OPTS["iters"]):
        loss = and_mask_step(canopy_net, opt, x, y, OPTS)
        print(f"iter {it}: summed site loss {loss:.4f}")


if __name__ == "__main__":
    main()
