"""DeepFill-v1-style image inpainting (coarse-to-fine generator, local and global WGAN-GP critics).

Reduced from https://github.com/daa233/generative-inpainting-pytorch/issues/38 (train.py + trainer.py of
generative-inpainting-pytorch): a `Trainer` module holds the generator and the two critics with one Adam
each; its forward computes the critic losses on the detached inpainted images, the gradient penalties,
and, every `n_critic` iterations, the generator's L1/AE/adversarial losses. The training script then
updates the critics and, on generator iterations, the generator. Synthetic 32x32 images and square holes.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import autograd

torch.manual_seed(0)

config = {
    "image_shape": (3, 32, 32),
    "mask_shape": (12, 12),
    "batch_size": 4,
    "lr": 1e-4,
    "beta1": 0.5,
    "beta2": 0.9,
    "n_critic": 2,
    "niter": 8,
    "coarse_l1_alpha": 1.2,
    "l1_loss_alpha": 1.2,
    "ae_loss_alpha": 1.2,
    "global_wgan_loss_alpha": 1.0,
    "gan_loss_alpha": 0.001,
    "wgan_gp_lambda": 10,
    "cnum": 8,
}


def gen_conv(cin, cout, k=3, stride=1, act=True):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2)]
    if act:
        layers.append(nn.ELU())
    return nn.Sequential(*layers)


class CoarseGenerator(nn.Module):
    def __init__(self, cnum):
        super().__init__()
        self.conv1 = gen_conv(5, cnum)
        self.conv2 = gen_conv(cnum, cnum * 2, stride=2)
        self.conv3 = gen_conv(cnum * 2, cnum * 2)
        self.conv4 = gen_conv(cnum * 2, cnum)
        self.out = gen_conv(cnum, 3, act=False)

    def forward(self, x, mask):
        ones = torch.ones_like(mask)
        h = self.conv1(torch.cat([x, ones, mask], dim=1))
        h = self.conv3(self.conv2(h))
        h = F.interpolate(h, scale_factor=2, mode="nearest")
        return torch.clamp(self.out(self.conv4(h)), -1.0, 1.0)


class FineGenerator(nn.Module):
    def __init__(self, cnum):
        super().__init__()
        self.conv1 = gen_conv(5, cnum)
        self.conv2 = gen_conv(cnum, cnum * 2, stride=2)
        self.conv3 = gen_conv(cnum * 2, cnum * 2)
        self.conv4 = gen_conv(cnum * 2, cnum)
        self.out = gen_conv(cnum, 3, act=False)

    def forward(self, xin, x_stage1, mask):
        x1_inpaint = x_stage1 * mask + xin * (1.0 - mask)
        ones = torch.ones_like(mask)
        h = self.conv1(torch.cat([x1_inpaint, ones, mask], dim=1))
        h = self.conv3(self.conv2(h))
        h = F.interpolate(h, scale_factor=2, mode="nearest")
        x_stage2 = torch.clamp(self.out(self.conv4(h)), -1.0, 1.0)
        offset_flow = torch.zeros_like(x_stage2)
        return x_stage2, offset_flow


class Generator(nn.Module):
    def __init__(self, cnum):
        super().__init__()
        self.coarse_generator = CoarseGenerator(cnum)
        self.fine_generator = FineGenerator(cnum)

    def forward(self, x, mask):
        x_stage1 = self.coarse_generator(x, mask)
        x_stage2, offset_flow = self.fine_generator(x, x_stage1, mask)
        return x_stage1, x_stage2, offset_flow


class DisConvModule(nn.Module):
    def __init__(self, cnum):
        super().__init__()
        self.conv1 = nn.Conv2d(3, cnum, 5, 2, 2)
        self.conv2 = nn.Conv2d(cnum, cnum * 2, 5, 2, 2)
        self.conv3 = nn.Conv2d(cnum * 2, cnum * 4, 5, 2, 2)

    def forward(self, x):
        x = F.leaky_relu(self.conv1(x), 0.2)
        x = F.leaky_relu(self.conv2(x), 0.2)
        return F.leaky_relu(self.conv3(x), 0.2)


class LocalDis(nn.Module):
    def __init__(self, cnum, patch):
        super().__init__()
        self.dis_conv_module = DisConvModule(cnum)
        side = (patch + 7) // 8
        self.linear = nn.Linear(cnum * 4 * side * side, 1)

    def forward(self, x):
        return self.linear(self.dis_conv_module(x).flatten(1))


class GlobalDis(LocalDis):
    pass


def random_bbox(config, batch_size):
    _, h, w = config["image_shape"]
    mh, mw = config["mask_shape"]
    tops = torch.randint(0, h - mh + 1, (batch_size,))
    lefts = torch.randint(0, w - mw + 1, (batch_size,))
    return [(int(t), int(left), mh, mw) for t, left in zip(tops, lefts)]


def bbox2mask(bboxes, config):
    _, h, w = config["image_shape"]
    mask = torch.zeros(len(bboxes), 1, h, w)
    for i, (t, left, mh, mw) in enumerate(bboxes):
        mask[i, :, t : t + mh, left : left + mw] = 1.0
    return mask


def mask_image(x, bboxes, config):
    mask = bbox2mask(bboxes, config)
    return x * (1.0 - mask), mask


def local_patch(x, bboxes):
    return torch.stack([x[i, :, t : t + mh, left : left + mw] for i, (t, left, mh, mw) in enumerate(bboxes)])


def spatial_discounting_mask(config):
    mh, mw = config["mask_shape"]
    gamma = 0.9
    ys = torch.arange(mh, dtype=torch.float32)
    xs = torch.arange(mw, dtype=torch.float32)
    dy = torch.minimum(ys + 1, mh - ys)
    dx = torch.minimum(xs + 1, mw - xs)
    return (gamma ** torch.minimum(dy[:, None], dx[None, :]))[None, None]


class Trainer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        cnum = config["cnum"]
        self.netG = Generator(cnum)
        self.localD = LocalDis(cnum, config["mask_shape"][0])
        self.globalD = GlobalDis(cnum, config["image_shape"][1])

        self.optimizer_g = torch.optim.Adam(
            self.netG.parameters(), lr=config["lr"], betas=(config["beta1"], config["beta2"])
        )
        d_params = list(self.localD.parameters()) + list(self.globalD.parameters())
        self.optimizer_d = torch.optim.Adam(d_params, lr=config["lr"], betas=(config["beta1"], config["beta2"]))

    def forward(self, x, bboxes, masks, ground_truth, compute_loss_g=False):
        self.train()
        l1_loss = nn.L1Loss()
        losses = {}

        x1, x2, offset_flow = self.netG(x, masks)
        local_patch_gt = local_patch(ground_truth, bboxes)
        x1_inpaint = x1 * masks + x * (1.0 - masks)
        x2_inpaint = x2 * masks + x * (1.0 - masks)
        local_patch_x1_inpaint = local_patch(x1_inpaint, bboxes)
        local_patch_x2_inpaint = local_patch(x2_inpaint, bboxes)

        # D part
        local_patch_real_pred, local_patch_fake_pred = self.dis_forward(
            self.localD, local_patch_gt, local_patch_x2_inpaint.detach()
        )
        global_real_pred, global_fake_pred = self.dis_forward(self.globalD, ground_truth, x2_inpaint.detach())
        losses["wgan_d"] = (
            torch.mean(local_patch_fake_pred - local_patch_real_pred)
            + torch.mean(global_fake_pred - global_real_pred) * self.config["global_wgan_loss_alpha"]
        )
        local_penalty = self.calc_gradient_penalty(self.localD, local_patch_gt, local_patch_x2_inpaint.detach())
        global_penalty = self.calc_gradient_penalty(self.globalD, ground_truth, x2_inpaint.detach())
        losses["wgan_gp"] = local_penalty + global_penalty

        # G part
        if compute_loss_g:
            sd_mask = spatial_discounting_mask(self.config)
            losses["l1"] = l1_loss(local_patch_x1_inpaint * sd_mask, local_patch_gt * sd_mask) * self.config[
                "coarse_l1_alpha"
            ] + l1_loss(local_patch_x2_inpaint * sd_mask, local_patch_gt * sd_mask)
            losses["ae"] = l1_loss(x1 * (1.0 - masks), ground_truth * (1.0 - masks)) * self.config[
                "coarse_l1_alpha"
            ] + l1_loss(x2 * (1.0 - masks), ground_truth * (1.0 - masks))

            local_patch_real_pred, local_patch_fake_pred = self.dis_forward(
                self.localD, local_patch_gt, local_patch_x2_inpaint
            )
            global_real_pred, global_fake_pred = self.dis_forward(self.globalD, ground_truth, x2_inpaint)
            losses["wgan_g"] = (
                -torch.mean(local_patch_fake_pred)
                - torch.mean(global_fake_pred) * self.config["global_wgan_loss_alpha"]
            )

        return losses, x2_inpaint, offset_flow

    def dis_forward(self, netD, ground_truth, x_inpaint):
        batch_size = ground_truth.size(0)
        batch_data = torch.cat([ground_truth, x_inpaint], dim=0)
        batch_output = netD(batch_data)
        real_pred, fake_pred = torch.split(batch_output, batch_size, dim=0)
        return real_pred, fake_pred

    def calc_gradient_penalty(self, netD, real_data, fake_data):
        batch_size = real_data.size(0)
        alpha = torch.rand(batch_size, 1, 1, 1).expand_as(real_data)
        interpolates = alpha * real_data + (1 - alpha) * fake_data
        interpolates = interpolates.requires_grad_().clone()
        disc_interpolates = netD(interpolates)
        grad_outputs = torch.ones(disc_interpolates.size())
        gradients = autograd.grad(
            outputs=disc_interpolates,
            inputs=interpolates,
            grad_outputs=grad_outputs,
            create_graph=True,
            retain_graph=True,
            only_inputs=True,
        )[0]
        gradients = gradients.view(batch_size, -1)
        return ((gradients.norm(2, dim=1) - 1) ** 2).mean()


def main():
    # a small synthetic "dataset": smooth random images in [-1, 1]
    base = torch.rand(32, *config["image_shape"]) * 2 - 1
    dataset = F.avg_pool2d(base, 3, 1, 1)

    trainer = Trainer(config)
    trainer_module = trainer

    for iteration in range(1, config["niter"] + 1):
        idx = torch.randint(0, dataset.size(0), (config["batch_size"],))
        ground_truth = dataset[idx]

        bboxes = random_bbox(config, batch_size=ground_truth.size(0))
        x, mask = mask_image(ground_truth, bboxes, config)

        ###### Forward pass ######
        compute_g_loss = iteration % config["n_critic"] == 0
        losses, inpainted_result, offset_flow = trainer(x, bboxes, mask, ground_truth, compute_g_loss)

        ###### Backward pass ######
        # Update D
        trainer_module.optimizer_d.zero_grad()
        losses["d"] = losses["wgan_d"] + losses["wgan_gp"] * config["wgan_gp_lambda"]
        losses["d"].backward()
        trainer_module.optimizer_d.step()

        # Update G
        if compute_g_loss:
            trainer_module.optimizer_g.zero_grad()
            losses["g"] = (
                losses["l1"] * config["l1_loss_alpha"]
                + losses["ae"] * config["ae_loss_alpha"]
                + losses["wgan_g"] * config["gan_loss_alpha"]
            )
            losses["g"].backward()
            trainer_module.optimizer_g.step()

        message = "Iter: [%d/%d] " % (iteration, config["niter"])
        for k in ["l1", "ae", "wgan_g", "wgan_d", "wgan_gp", "g", "d"]:
            v = losses.get(k, 0.0)
            message += "%s: %.6f " % (k, float(v))
        print(message)


if __name__ == "__main__":
    main()
