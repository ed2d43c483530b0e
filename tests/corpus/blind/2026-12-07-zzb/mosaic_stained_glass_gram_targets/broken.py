"""Stained-glass mosaic rendering: a tile renderer trained to match the texture statistics of a reference panel.

Source: https://github.com/limingcv/Photorealistic-Style-Transfer/issues/7
("BackProp Error"). Running the repository's style-transfer training, the user got
"Trying to backward through the graph a second time"; setting retain_graph=True
only ran the GPU out of memory. The thread gives no code beyond the message.

Reduction (my own): the usual cause in a style-transfer loop of that kind is
that the style targets (Gram matrices of the reference image's features) are
computed once, before the loop, through a feature network whose parameters still
require grad, so every step's style loss reaches back into that one target graph,
freed by the first backward. Here the image being optimised is replaced by a
small renderer network that turns a tile-layout code (tile colours and lead-line
weights on a grid) into a panel image, trained against a reference stained-glass
panel's Gram statistics plus a content term towards the layout's flat colours.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

GRID = 8
PANEL = 32
SETTINGS = {"style_layers": (0, 1, 2), "style_weight": 5.0, "content_weight": 1.0, "lr": 2e-3, "iters": 6}


class TextureEncoder(nn.Module):
    """A small conv stack standing in for the pretrained feature network."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([
            nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()),
            nn.Sequential(nn.Conv2d(8, 16, 3, padding=1, stride=2), nn.ReLU()),
            nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, stride=2), nn.ReLU()),
        ])

    def forward(self, img):
        feats = []
        h = img
        for block in self.blocks:
            h = block(h)
            feats.append(h)
        return feats


class TileRenderer(nn.Module):
    def __init__(self, code_dim=6):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(code_dim, 16, 1), nn.ReLU())
        self.up = nn.Sequential(
            nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
            nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(16, 3, 3, padding=1),
        )

    def forward(self, code):
        return torch.sigmoid(self.up(self.expand(code)))


def gram(feat):
    b, c, h, w = feat.shape
    f = feat.flatten(2)
    return f @ f.transpose(1, 2) / (c * h * w)


def make_reference_panel():
    """Bright glass cells separated by dark lead lines."""
    cells = torch.rand(1, 3, GRID, GRID)
    panel = F.interpolate(cells, size=(PANEL, PANEL), mode="nearest")
    lead = torch.ones(1, 1, PANEL, PANEL)
    lead[..., :: PANEL // GRID, :] = 0.1
    lead[..., :, :: PANEL // GRID] = 0.1
    return panel * lead


def make_layouts(n):
    colours = torch.rand(n, 3, GRID, GRID)
    lead_w = torch.rand(n, 3, GRID, GRID) * 0.5
    return torch.cat([colours, lead_w], dim=1)


def style_targets(encoder, reference, layers):
    feats = encoder(reference)
    return [gram(feats[i]) for i in layers]


def mosaic_losses(encoder, renderer, layouts, targets, cfg):
    panels = renderer(layouts)
    feats = encoder(panels)
    style_loss = sum(F.mse_loss(gram(feats[i]), t.expand(panels.shape[0], -1, -1))
                     for i, t in zip(cfg["style_layers"], targets))
    flat = F.interpolate(layouts[:, :3], size=(PANEL, PANEL), mode="nearest")
    content_loss = F.mse_loss(panels, flat)
    return style_loss, content_loss


def main():
    cfg = SETTINGS
    encoder = TextureEncoder()
    renderer = TileRenderer()
    reference = make_reference_panel()
    targets = style_targets(encoder, reference, cfg["style_layers"])
    opt_render = torch.optim.Adam(renderer.parameters(), lr=cfg["lr"])

    for it in range(cfg["iters"]):
        layouts = make_layouts(4)
        style_loss, content_loss = mosaic_losses(encoder, renderer, layouts, targets, cfg)
        total = cfg["style_weight"] * style_loss + cfg["content_weight"] * content_loss
        opt_render.zero_grad()
        total.backward()
        opt_render.step()
        print(f"iter {it}: style {style_loss.item():.5f} content {content_loss.item():.4f}")


if __name__ == "__main__":
    main()
