"""Few-shot font generation in the FUNIT layout: a content encoder reads a glyph in the source
font, a style encoder averages the codes of K reference glyphs of a target font, an AdaIN
decoder draws the glyph in that font; a multi-task patch discriminator with pre-activation
residual blocks (one output channel per training font), hinge loss, R1 on reals, feature
matching on the discriminator's features.

Report: https://github.com/NVlabs/FUNIT/issues/23 -- training FUNIT failed in backward with
"one of the variables needed for gradient computation has been modified by an inplace
operation" on a discriminator feature map. FUNIT's ``ActFirstResBlock`` reads its input twice:
the learned 1x1 shortcut convolution saves it for its weight gradient, then the residual
branch starts with ``LeakyReLU(inplace=True)`` applied to that same tensor. The fix given in
the thread is ``inplace=False`` in the blocks' activations. The report trains on animal faces;
the few-shot font setting is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_FONTS, N_CHARS, SIZE, K_SHOT, BATCH = 4, 12, 16, 3, 6


class Conv2dBlock(nn.Module):
    def __init__(self, cin, cout, k, stride=1, norm="none", activation="lrelu", activation_first=False):
        super().__init__()
        self.pad = nn.ReflectionPad2d(k // 2)
        self.conv = nn.Conv2d(cin, cout, k, stride)
        self.norm = nn.InstanceNorm2d(cout) if norm == "in" else None
        self.activation = {"lrelu": nn.LeakyReLU(0.2, inplace=True), "relu": nn.ReLU(inplace=True),
                           "none": None}[activation]
        self.activation_first = activation_first

    def forward(self, x):
        if self.activation_first:
            x = self.activation(x)
            return self.conv(self.pad(x))
        x = self.conv(self.pad(x))
        if self.norm is not None:
            x = self.norm(x)
        return self.activation(x) if self.activation is not None else x


class ActFirstResBlock(nn.Module):
    def __init__(self, fin, fout):
        super().__init__()
        fhid = min(fin, fout)
        self.conv_0 = Conv2dBlock(fin, fhid, 3, activation_first=True)
        self.conv_1 = Conv2dBlock(fhid, fout, 3, activation_first=True)
        self.conv_s = nn.Conv2d(fin, fout, 1, bias=False) if fin != fout else None

    def forward(self, x):
        x_s = self.conv_s(x) if self.conv_s is not None else x
        dx = self.conv_1(self.conv_0(x))
        return x_s + dx


class PatchDiscriminator(nn.Module):
    def __init__(self, nf=16):
        super().__init__()
        self.cnn_f = nn.Sequential(
            nn.Conv2d(1, nf, 3, padding=1),
            ActFirstResBlock(nf, nf), ActFirstResBlock(nf, 2 * nf), nn.AvgPool2d(2),
            ActFirstResBlock(2 * nf, 2 * nf), ActFirstResBlock(2 * nf, 4 * nf),
        )
        self.cnn_c = nn.Sequential(nn.LeakyReLU(0.2), nn.Conv2d(4 * nf, N_FONTS, 1))

    def forward(self, x, font):
        feat = self.cnn_f(x)
        out = self.cnn_c(feat)
        return out[torch.arange(x.shape[0]), font], feat


class AdaIN(nn.Module):
    def forward(self, x, gamma, beta):
        return F.instance_norm(x) * (1 + gamma[..., None, None]) + beta[..., None, None]


class FewShotFontGen(nn.Module):
    def __init__(self, nf=16, style_dim=32):
        super().__init__()
        self.enc_content = nn.Sequential(Conv2dBlock(1, nf, 3, norm="in", activation="relu"),
                                         Conv2dBlock(nf, 2 * nf, 3, 2, norm="in", activation="relu"))
        self.enc_style = nn.Sequential(Conv2dBlock(1, nf, 3, activation="relu"),
                                       Conv2dBlock(nf, 2 * nf, 3, 2, activation="relu"),
                                       nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * nf, style_dim))
        self.mlp = nn.Linear(style_dim, 4 * 2 * nf)
        self.adain = AdaIN()
        self.dec1 = nn.Conv2d(2 * nf, 2 * nf, 3, padding=1)
        self.dec2 = nn.Conv2d(2 * nf, nf, 3, padding=1)
        self.to_img = nn.Conv2d(nf, 1, 3, padding=1)

    def style_code(self, refs):  # refs: (B, K, 1, H, W) -> mean code over the K reference glyphs
        b, k = refs.shape[:2]
        return self.enc_style(refs.flatten(0, 1)).view(b, k, -1).mean(1)

    def decode(self, content, style):
        g1, b1, g2, b2 = self.mlp(style).chunk(4, dim=1)
        x = F.relu(self.adain(self.dec1(content), g1, b1))
        x = F.interpolate(F.relu(self.adain(self.dec2(x), g2[:, :x.shape[1] // 2], b2[:, :x.shape[1] // 2])),
                          scale_factor=2)
        return torch.tanh(self.to_img(x))


def glyph_bank():
    """Synthetic glyphs: each char is a stroke skeleton, each font a stroke width and slant."""
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, SIZE), torch.linspace(-1, 1, SIZE), indexing="ij")
    pts = torch.rand(N_CHARS, 4, 2) * 1.4 - 0.7
    bank = torch.zeros(N_FONTS + 1, N_CHARS, 1, SIZE, SIZE)
    for f in range(N_FONTS + 1):  # font N_FONTS is the source (content) font
        width, slant = 0.05 + 0.04 * f, 0.15 * (f - 2)
        for c in range(N_CHARS):
            d = torch.stack([(xx + slant * yy - p[0]) ** 2 + (yy - p[1]) ** 2 for p in pts[c]]).min(0).values
            bank[f, c, 0] = torch.tanh(3 * (torch.exp(-d / width) - 0.5))
    return bank


def recon(a, b):
    return (a - b).abs().mean()


bank = glyph_bank()
gen, dis = FewShotFontGen(), PatchDiscriminator()
gen_opt = torch.optim.RMSprop(gen.parameters(), lr=1e-4, weight_decay=1e-4)
dis_opt = torch.optim.RMSprop(dis.parameters(), lr=1e-4, weight_decay=1e-4)

for it in range(12):
    chars = torch.randint(0, N_CHARS, (BATCH,))
    fa, fb = torch.randint(0, N_FONTS, (BATCH,)), torch.randint(0, N_FONTS, (BATCH,))
    src = bank[N_FONTS, chars]
    xa, xb = bank[fa, chars], bank[fb, chars]
    refs_a = bank[fa[:, None], torch.randint(0, N_CHARS, (BATCH, K_SHOT))]
    refs_b = bank[fb[:, None], torch.randint(0, N_CHARS, (BATCH, K_SHOT))]

    # discriminator update
    dis_opt.zero_grad()
    xb.requires_grad_()
    resp_r, _ = dis(xb, fb)
    l_real = F.relu(1.0 - resp_r).mean()
    l_real.backward(retain_graph=True)
    grad_r, = torch.autograd.grad(resp_r.mean(), xb, create_graph=True)
    l_reg = 10 * grad_r.pow(2).sum() / BATCH
    l_reg.backward()
    with torch.no_grad():
        xt = gen.decode(gen.enc_content(src), gen.style_code(refs_b))
    resp_f, _ = dis(xt.detach(), fb)
    l_fake = F.relu(1.0 + resp_f).mean()
    l_fake.backward()
    dis_opt.step()

    # generator update
    gen_opt.zero_grad()
    c_src = gen.enc_content(src)
    xt = gen.decode(c_src, gen.style_code(refs_b))
    xr = gen.decode(gen.enc_content(xa), gen.style_code(refs_a))
    resp_t, feat_t = dis(xt, fb)
    resp_rec, feat_r = dis(xr, fa)
    _, feat_b = dis(xb.detach(), fb)
    _, feat_a = dis(xa, fa)
    l_adv = -0.5 * (resp_t.mean() + resp_rec.mean())
    l_fm = recon(feat_t.mean((2, 3)), feat_b.mean((2, 3))) + recon(feat_r.mean((2, 3)), feat_a.mean((2, 3)))
    l_total = l_adv + 0.1 * recon(xr, xa) + 1.0 * l_fm
    l_total.backward()
    gen_opt.step()

    if it % 4 == 0:
        print(f"{it}: D real {l_real.item():.3f} fake {l_fake.item():.3f} G {l_total.item():.3f}")
