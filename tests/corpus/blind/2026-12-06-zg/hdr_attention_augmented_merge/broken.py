"""Multi-exposure HDR merging with an attention-augmented merge network, tonemapped loss.

Report: https://github.com/leaderj1001/Attention-Augmented-Conv2d/issues/31
The author dropped the repository's ``AugmentedConv`` (attention-augmented convolution) into a
small CNN and training failed with "Output 0 of ReshapeAliasBackward0 is a view and is being
modified inplace. This view is the output of a function that returns multiple views." The layer
splits the qkv convolution's output with ``torch.split``, reshapes each part into heads and then
scales the queries in place (``q *= dkh ** -0.5``); ``q`` is a view of one of split's outputs.
The training setting is the writer's: an AHDRNet-style deghosting network (attention maps of the
non-reference exposures against the reference one) whose merge stage uses that layer, trained on
synthetic three-exposure bursts with an L1 loss on mu-law tonemapped HDR.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

MU = 5000.0
EXPOSURES = torch.tensor([1.0, 4.0, 16.0])


def ldr_to_hdr(ldr, t, gamma=2.2):
    return ldr.clamp(0, 1) ** gamma / t


def tonemap(hdr):
    return torch.log1p(MU * hdr) / torch.log1p(torch.tensor(MU))


class AugmentedConv(nn.Module):
    def __init__(self, in_ch, out_ch, dk, dv, nh):
        super().__init__()
        self.dk, self.dv, self.nh = dk, dv, nh
        self.conv_out = nn.Conv2d(in_ch, out_ch - dv, 3, padding=1)
        self.qkv_conv = nn.Conv2d(in_ch, 2 * dk + dv, 1)
        self.attn_out = nn.Conv2d(dv, dv, 1)

    def split_heads_2d(self, x):
        b, c, h, w = x.shape
        return torch.reshape(x, (b, self.nh, c // self.nh, h, w))

    def forward(self, x):
        b, _, h, w = x.shape
        conv_out = self.conv_out(x)
        qkv = self.qkv_conv(x)
        q, k, v = torch.split(qkv, [self.dk, self.dk, self.dv], dim=1)
        q = self.split_heads_2d(q)
        k = self.split_heads_2d(k)
        v = self.split_heads_2d(v)
        dkh = self.dk // self.nh
        q *= dkh ** -0.5
        flat_q = torch.reshape(q, (b, self.nh, dkh, h * w))
        flat_k = torch.reshape(k, (b, self.nh, dkh, h * w))
        flat_v = torch.reshape(v, (b, self.nh, self.dv // self.nh, h * w))
        logits = torch.matmul(flat_q.transpose(2, 3), flat_k)
        weights = F.softmax(logits, dim=-1)
        attn = torch.matmul(weights, flat_v.transpose(2, 3))
        attn = torch.reshape(attn.transpose(2, 3), (b, self.dv, h, w))
        return torch.cat((conv_out, self.attn_out(attn)), dim=1)


class ExposureAttention(nn.Module):
    """Attention map of a non-reference exposure's features, given the reference's."""

    def __init__(self, ch):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(2 * ch, 2 * ch, 3, padding=1), nn.LeakyReLU(0.1),
                                 nn.Conv2d(2 * ch, ch, 3, padding=1), nn.Sigmoid())

    def forward(self, f_other, f_ref):
        return f_other * self.net(torch.cat([f_other, f_ref], dim=1))


class AttentionHDRNet(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.encode = nn.Conv2d(6, ch, 3, padding=1)
        self.att_short = ExposureAttention(ch)
        self.att_long = ExposureAttention(ch)
        self.merge_in = nn.Conv2d(3 * ch, ch, 3, padding=1)
        self.merge_attn = AugmentedConv(ch, ch, dk=8, dv=8, nh=2)
        self.merge_out = nn.Sequential(nn.LeakyReLU(0.1), nn.Conv2d(ch, 3, 3, padding=1), nn.Sigmoid())

    def forward(self, ldrs):
        feats = []
        for i in range(3):
            hdr_i = ldr_to_hdr(ldrs[:, i], EXPOSURES[i])
            feats.append(F.leaky_relu(self.encode(torch.cat([ldrs[:, i], hdr_i], dim=1)), 0.1))
        f_short, f_ref, f_long = feats
        x = torch.cat([self.att_short(f_short, f_ref), f_ref, self.att_long(f_long, f_ref)], dim=1)
        x = F.leaky_relu(self.merge_in(x), 0.1)
        x = x + self.merge_attn(x)
        return self.merge_out(x)


def make_burst(batch, size=12):
    radiance = torch.rand(batch, 3, size, size) ** 2
    shift = torch.randint(-1, 2, (2,))
    ldrs = []
    for i, t in enumerate(EXPOSURES):
        scene = radiance if i == 1 else torch.roll(radiance, shifts=(int(shift[0]), int(shift[1])), dims=(2, 3))
        ldrs.append((scene * t).clamp(0, 1) ** (1 / 2.2))
    return torch.stack(ldrs, dim=1), radiance


model = AttentionHDRNet()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)

for step in range(4):
    ldrs, target = make_burst(4)
    pred = model(ldrs)
    loss = F.l1_loss(tonemap(pred), tonemap(target))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: tonemapped L1 {loss.item():.4f}")
