"""Self-supervised monocular depth (Monodepth2-style trainer: depth encoder/decoder + pose network).

Reduced from https://github.com/nianticlabs/monodepth2/issues/24: a `Trainer` with `models` dict
(encoder, depth decoder, pose net) and one Adam over all their parameters; `process_batch` predicts
the target frame's disparity and the relative camera motion, warps the source frame into the target
view and computes a photometric + smoothness loss; `run_epoch` trains on every batch and calls `val()`
(one validation batch under `torch.no_grad()`) at log time. The author had changed code around
`process_batch`. Synthetic stereo-like frame pairs (horizontal camera motion), 24x32 images.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Options:
    height = 24
    width = 32
    batch_size = 4
    learning_rate = 1e-4
    num_epochs = 2
    log_frequency = 2
    disparity_smoothness = 1e-3
    min_depth = 0.1
    max_depth = 100.0


class ResnetEncoder(nn.Module):
    def __init__(self, in_ch=3):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(in_ch, 8, 3, 2, 1), nn.ReLU())
        self.layer2 = nn.Sequential(nn.Conv2d(8, 16, 3, 2, 1), nn.ReLU())

    def forward(self, x):
        f1 = self.layer1((x - 0.45) / 0.225)
        return [f1, self.layer2(f1)]


class DepthDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.up2 = nn.Sequential(nn.Conv2d(16, 8, 3, padding=1), nn.ELU())
        self.up1 = nn.Sequential(nn.Conv2d(16, 8, 3, padding=1), nn.ELU())
        self.dispconv = nn.Conv2d(8, 1, 3, padding=1)

    def forward(self, features):
        f1, f2 = features
        x = F.interpolate(self.up2(f2), scale_factor=2, mode="nearest")
        x = F.interpolate(self.up1(torch.cat([x, f1], 1)), scale_factor=2, mode="nearest")
        return {("disp", 0): torch.sigmoid(self.dispconv(x))}


class PoseNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(6, 8, 3, 2, 1), nn.ReLU(), nn.Conv2d(8, 8, 3, 2, 1), nn.ReLU())
        self.fc = nn.Linear(8, 1)

    def forward(self, pair):
        h = self.net(pair).mean(dim=(2, 3))
        return 0.01 * self.fc(h)  # horizontal translation of the camera


def disp_to_depth(disp, min_depth, max_depth):
    min_disp, max_disp = 1 / max_depth, 1 / min_depth
    scaled_disp = min_disp + (max_disp - min_disp) * disp
    return scaled_disp, 1 / scaled_disp


def get_smooth_loss(disp, img):
    grad_disp_x = torch.abs(disp[:, :, :, :-1] - disp[:, :, :, 1:])
    grad_disp_y = torch.abs(disp[:, :, :-1, :] - disp[:, :, 1:, :])
    grad_img_x = torch.mean(torch.abs(img[:, :, :, :-1] - img[:, :, :, 1:]), 1, keepdim=True)
    grad_img_y = torch.mean(torch.abs(img[:, :, :-1, :] - img[:, :, 1:, :]), 1, keepdim=True)
    grad_disp_x *= torch.exp(-grad_img_x)
    grad_disp_y *= torch.exp(-grad_img_y)
    return grad_disp_x.mean() + grad_disp_y.mean()


def make_split(n, opt):
    """Target frame and a source frame seen from a camera moved sideways (shift grows with nearness)."""
    scene = F.avg_pool2d(torch.rand(n, 3, opt.height + 4, opt.width + 4), 5, 1)
    source = torch.roll(scene, shifts=1, dims=3) * 0.95 + 0.02
    return [{("color", 0): scene[i : i + opt.batch_size], ("color", 1): source[i : i + opt.batch_size]}
            for i in range(0, n, opt.batch_size)]


class Trainer:
    def __init__(self, options):
        self.opt = options
        self.models = {"encoder": ResnetEncoder(), "depth": DepthDecoder(), "pose": PoseNet()}
        self.parameters_to_train = []
        for m in self.models.values():
            self.parameters_to_train += list(m.parameters())
        self.model_optimizer = torch.optim.Adam(self.parameters_to_train, self.opt.learning_rate)

        self.train_loader = make_split(16, self.opt)
        self.val_loader = make_split(8, self.opt)
        self.val_iter = iter(self.val_loader)
        self.step = 0

        ys, xs = torch.meshgrid(torch.linspace(-1, 1, self.opt.height), torch.linspace(-1, 1, self.opt.width),
                                indexing="ij")
        self.base_grid = torch.stack([xs, ys], dim=-1)[None]

    def set_train(self):
        for m in self.models.values():
            m.train()

    def set_eval(self):
        for m in self.models.values():
            m.eval()

    def train(self):
        for epoch in range(self.opt.num_epochs):
            self.epoch = epoch
            self.run_epoch()

    def run_epoch(self):
        self.set_train()
        for batch_idx, inputs in enumerate(self.train_loader):
            outputs, losses = self.process_batch(inputs)

            early_phase = batch_idx % self.opt.log_frequency == 0 and self.step < 2000
            if early_phase:
                print(f"epoch {self.epoch} batch {batch_idx} loss {losses['loss'].item():.4f}")
                self.val()
            self.step += 1

    def process_batch(self, inputs):
        features = self.models["encoder"](inputs[("color", 0)])
        outputs = self.models["depth"](features)
        pair = torch.cat([inputs[("color", 0)], inputs[("color", 1)]], 1)
        outputs[("translation", 1)] = self.models["pose"](pair)
        self.generate_images_pred(inputs, outputs)
        losses = self.compute_losses(inputs, outputs)

        self.model_optimizer.zero_grad()
        losses["loss"].backward()
        self.model_optimizer.step()
        return outputs, losses

    def generate_images_pred(self, inputs, outputs):
        disp = outputs[("disp", 0)]
        scaled_disp, depth = disp_to_depth(disp, self.opt.min_depth, self.opt.max_depth)
        outputs[("depth", 0)] = depth
        flow_x = outputs[("translation", 1)][:, :, None, None] * scaled_disp  # pixels move with 1/depth
        grid = self.base_grid.repeat(disp.size(0), 1, 1, 1).clone()
        grid = grid + torch.cat([flow_x.permute(0, 2, 3, 1), torch.zeros_like(flow_x).permute(0, 2, 3, 1)], -1)
        outputs[("color", 1)] = F.grid_sample(inputs[("color", 1)], grid, padding_mode="border",
                                              align_corners=True)

    def compute_losses(self, inputs, outputs):
        target = inputs[("color", 0)]
        reprojection_loss = torch.abs(outputs[("color", 1)] - target).mean()
        disp = outputs[("disp", 0)]
        mean_disp = disp.mean(2, True).mean(3, True)
        smooth_loss = get_smooth_loss(disp / (mean_disp + 1e-7), target)
        loss = reprojection_loss + self.opt.disparity_smoothness * smooth_loss
        return {"loss": loss, "reprojection": reprojection_loss}

    def val(self):
        """Validate the model on a single minibatch"""
        self.set_eval()
        try:
            inputs = next(self.val_iter)
        except StopIteration:
            self.val_iter = iter(self.val_loader)
            inputs = next(self.val_iter)

        with torch.no_grad():
            outputs, losses = self.process_batch(inputs)
            print(f"  val loss {losses['loss'].item():.4f}")
            del inputs, outputs, losses

        self.set_train()


if __name__ == "__main__":
    trainer = Trainer(Options())
    trainer.train()
