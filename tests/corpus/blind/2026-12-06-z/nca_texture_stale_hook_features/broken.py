"""Neural cellular automaton for texture synthesis (Self-Organising Textures): fixed Sobel/Laplacian
perception, a 1x1-conv update rule, stochastic per-cell updates, trained first towards a content
layout and then towards a texture with a Gram-matrix loss on a frozen conv net's features, which are
read through fast.ai-style ``SaveFeatures`` forward hooks.

Report: https://github.com/fastai/fastai/pull/761 ("fix courses/dl2/style-transfer.ipynb"). The style
transfer notebook raised "Trying to backward through the graph a second time" in its style section;
the PR fixed it "by reinitializing sfs", the list of forward hooks. The style section had reused the
hook objects of the content section, which no longer received new activations, so the style targets
(and the features the loss read) were the last activations of the previous optimisation, graph and all.

The training setting is the writer's: the content stage closes its hooks when it is done, and the
texture stage reads targets and features from the same, closed ``sfs``; its first backward runs into
the content stage's last graph, already freed.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

SIZE = 16
CH = 12
BATCH = 2
ROLLOUT = 6
CONTENT_STEPS = 3
TEXTURE_STEPS = 3


class SaveFeatures:
    """Forward hook keeping a layer's last output (fast.ai course style)."""

    features = None

    def __init__(self, module):
        self.hook = module.register_forward_hook(self.hook_fn)

    def hook_fn(self, module, inputs, output):
        self.features = output

    def close(self):
        self.hook.remove()


class TextureNCA(nn.Module):
    def __init__(self, ch=CH, hidden=48, fire_rate=0.5):
        super().__init__()
        sobel = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]) / 8
        lap = torch.tensor([[1.0, 2.0, 1.0], [2.0, -12.0, 2.0], [1.0, 2.0, 1.0]]) / 16
        ident = torch.zeros(3, 3)
        ident[1, 1] = 1.0
        kernels = torch.stack([ident, sobel, sobel.T, lap])  # 4 filters per channel
        self.register_buffer("kernels", kernels.repeat(ch, 1, 1).unsqueeze(1))
        self.w1 = nn.Conv2d(4 * ch, hidden, 1)
        self.w2 = nn.Conv2d(hidden, ch, 1, bias=False)
        nn.init.zeros_(self.w2.weight)
        self.ch, self.fire_rate = ch, fire_rate

    def perceive(self, x):
        return F.conv2d(F.pad(x, (1, 1, 1, 1), mode="circular"), self.kernels, groups=self.ch)

    def forward(self, x, steps):
        for _ in range(steps):
            dx = self.w2(F.relu(self.w1(self.perceive(x))))
            fire = (torch.rand(x.shape[0], 1, x.shape[2], x.shape[3]) < self.fire_rate).float()
            x = x + dx * fire
        return x


def to_rgb(x):
    return x[:, :3] + 0.5


def gram(feat):
    b, c, h, w = feat.shape
    f = feat.reshape(b, c, h * w)
    return f @ f.transpose(1, 2) / (c * h * w)


# frozen feature extractor standing in for VGG
vgg = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
    nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
).requires_grad_(False)
block_ends = [1, 6]

yy, xx = torch.meshgrid(torch.linspace(0, 1, SIZE), torch.linspace(0, 1, SIZE), indexing="ij")
content_img = torch.stack([xx, yy, 1 - xx]).unsqueeze(0)
style_img = (0.5 + 0.5 * torch.sin(torch.stack([12 * xx, 12 * yy, 8 * (xx + yy)]))).unsqueeze(0)

nca = TextureNCA()
content_opt = torch.optim.Adam(nca.parameters(), lr=2e-3)
texture_opt = torch.optim.Adam(nca.parameters(), lr=1e-3)


def seed(batch):
    return 0.1 * torch.randn(batch, CH, SIZE, SIZE)


# stage 1: content layout from the deepest hooked layer
sfs = [SaveFeatures(vgg[i]) for i in block_ends]
vgg(content_img)
targ_content = sfs[-1].features.clone()
for step in range(CONTENT_STEPS):
    x = nca(seed(BATCH), ROLLOUT)
    vgg(to_rgb(x))
    content_loss = F.mse_loss(sfs[-1].features, targ_content.expand_as(sfs[-1].features))
    content_opt.zero_grad()
    content_loss.backward()
    content_opt.step()
    print(f"content step {step}: {content_loss.item():.3e}")
for sf in sfs:
    sf.close()

# stage 2: texture from the Gram matrices of every hooked layer
vgg(style_img)
targ_styles = [gram(o.features.clone()) for o in sfs]
for step in range(TEXTURE_STEPS):
    x = nca(seed(BATCH), ROLLOUT)
    vgg(to_rgb(x))
    outs = [o.features for o in sfs]
    style_loss = sum(F.mse_loss(gram(o), s.expand(o.shape[0], -1, -1)) for o, s in zip(outs, targ_styles))
    texture_opt.zero_grad()
    style_loss.backward()
    texture_opt.step()
    print(f"texture step {step}: {style_loss.item():.3e}")
