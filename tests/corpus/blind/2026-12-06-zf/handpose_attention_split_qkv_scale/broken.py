"""Hand pose estimation: 2-D heatmaps from an attention-augmented conv net, lifted to 3-D.

Source: https://github.com/hanchenchen/Attention-A-Lightweight-2D-Hand-Pose-Estimation-Approach-Pytorch/issues/4
The author was running the "attention augmented convolution" blocks of a lightweight
2-D hand keypoint network. The block computes one qkv convolution, cuts it into
q, k and v with torch.split, reshapes each into heads and then scales the queries
in place (`q *= dkh ** -0.5`). q is a reshape of one output of torch.split, a
function returning several views, so the in-place scale is refused in the forward:
"Output 0 of ReshapeAliasBackward0 is a view and is being modified inplace".
The heatmap head, the soft-argmax, the 2-D to 3-D lifter and the bone-length
(kinematic) prior around it are the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_JOINTS = 21
# parent of each joint in a 21-joint hand skeleton (wrist = 0, four joints per finger)
PARENTS = [0, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11, 0, 13, 14, 15, 0, 17, 18, 19]


class AugmentedConv(nn.Module):
    """Convolution concatenated with multi-head self-attention over the feature map."""

    def __init__(self, cin, cout, dk=8, dv=8, nh=2):
        super().__init__()
        self.dk, self.dv, self.nh = dk, dv, nh
        self.conv_out = nn.Conv2d(cin, cout - dv, 3, padding=1)
        self.qkv_conv = nn.Conv2d(cin, 2 * dk + dv, 3, padding=1)
        self.attn_out = nn.Conv2d(dv, dv, 1)

    def split_heads_2d(self, x):
        b, c, h, w = x.shape
        return torch.reshape(x, (b, self.nh, c // self.nh, h, w))

    def compute_flat_qkv(self, x):
        qkv = self.qkv_conv(x)
        n, _, h, w = qkv.shape
        q, k, v = torch.split(qkv, [self.dk, self.dk, self.dv], dim=1)
        q = self.split_heads_2d(q)
        k = self.split_heads_2d(k)
        v = self.split_heads_2d(v)
        dkh = self.dk // self.nh
        q *= dkh ** -0.5
        flat_q = torch.reshape(q, (n, self.nh, dkh, h * w))
        flat_k = torch.reshape(k, (n, self.nh, dkh, h * w))
        flat_v = torch.reshape(v, (n, self.nh, self.dv // self.nh, h * w))
        return flat_q, flat_k, flat_v

    def forward(self, x):
        conv_out = self.conv_out(x)
        b, _, h, w = conv_out.shape
        flat_q, flat_k, flat_v = self.compute_flat_qkv(x)
        logits = torch.matmul(flat_q.transpose(2, 3), flat_k)
        weights = F.softmax(logits, dim=-1)
        attn = torch.matmul(weights, flat_v.transpose(2, 3))
        attn = torch.reshape(attn.transpose(2, 3), (b, self.dv, h, w))
        return torch.cat((conv_out, self.attn_out(attn)), dim=1)


class HandKeypointNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.Mish())
        self.aug = nn.Sequential(AugmentedConv(16, 32), nn.BatchNorm2d(32), nn.Mish())
        self.head = nn.Conv2d(32, N_JOINTS, 1)

    def forward(self, img):
        return self.head(self.aug(self.stem(img)))  # heatmaps [B, 21, H, W]


def soft_argmax(heatmaps):
    b, j, h, w = heatmaps.shape
    prob = F.softmax(heatmaps.reshape(b, j, -1), dim=-1).reshape(b, j, h, w)
    ys = torch.linspace(0, 1, h)
    xs = torch.linspace(0, 1, w)
    return torch.stack([(prob.sum(2) * xs).sum(-1), (prob.sum(3) * ys).sum(-1)], dim=-1)


def bone_lengths(joints):
    return (joints - joints[:, PARENTS]).norm(dim=-1)[:, 1:]


lifter = nn.Sequential(nn.Linear(N_JOINTS * 2, 64), nn.ReLU(), nn.Linear(64, N_JOINTS * 3))
net = HandKeypointNet()
opt_2d = torch.optim.Adam(net.parameters(), lr=1e-3)
opt_lift = torch.optim.Adam(lifter.parameters(), lr=1e-3)

# synthetic hand crops with ground-truth 2-D and 3-D joints and Gaussian target heatmaps
images = torch.randn(8, 3, 16, 16)
gt_3d = torch.randn(8, N_JOINTS, 3) * 0.1
gt_2d = torch.sigmoid(gt_3d[..., :2] * 5)
grid = torch.linspace(0, 1, 8)
gy, gx = torch.meshgrid(grid, grid, indexing="ij")
gt_heat = torch.exp(-((gx - gt_2d[..., 0, None, None]) ** 2 + (gy - gt_2d[..., 1, None, None]) ** 2) / 0.02)
template_bones = bone_lengths(gt_3d).mean(0)

for step in range(3):
    for i in range(0, 8, 4):
        img, hm_t, j2, j3 = images[i:i + 4], gt_heat[i:i + 4], gt_2d[i:i + 4], gt_3d[i:i + 4]
        heat = net(img)
        pose_2d = soft_argmax(heat)
        pose_3d = lifter(pose_2d.reshape(-1, N_JOINTS * 2)).reshape(-1, N_JOINTS, 3)
        hm_loss = F.mse_loss(heat, hm_t)
        coord_loss = F.l1_loss(pose_2d, j2)
        lift_loss = F.mse_loss(pose_3d, j3)
        bone_loss = F.mse_loss(bone_lengths(pose_3d), template_bones.expand(pose_3d.shape[0], -1))
        loss = hm_loss + coord_loss + lift_loss + 0.1 * bone_loss
        opt_2d.zero_grad()
        opt_lift.zero_grad()
        loss.backward()
        opt_2d.step()
        opt_lift.step()
    print(f"step {step} loss {loss.item():.4f}")
