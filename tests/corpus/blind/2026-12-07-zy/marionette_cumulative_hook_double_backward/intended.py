"""Marionette motion capture: a small hook-based runner fits joint angles from control-bar IMU data.

Reduced from a comment on open-mmlab/mmcv issue #2074
(https://github.com/open-mmlab/mmcv/issues/2074): the author, training an
mmsegmentation model, enabled gradient accumulation by adding
``GradientCumulativeOptimizerHook`` to the config and got "Trying to backward
through the graph a second time" from the hook's ``loss.backward()`` in
``after_train_iter``. The runner already builds its default ``OptimizerHook``
from ``optimizer_config``, and the accumulation hook was registered next to it
as a custom hook, so both hooks run a backward on the same ``runner.outputs``.

Here the runner, its two hooks and the config are written out in a few lines;
the model maps a marionette's control-bar IMU window to the puppet's limb
joint angles (the report is a segmentation model, the training setting is the
writer's).
"""
import torch
import torch.nn as nn

torch.manual_seed(7)

CFG = {
    "optimizer": {"lr": 3e-3},
    "optimizer_config": {"type": "GradientCumulativeOptimizerHook", "grad_clip": None, "cumulative_iters": 2},
    "custom_hooks": [],
    "max_iters": 8,
    "batch": 16,
}


class BarToPose(nn.Module):
    """IMU window of the control bar (6 channels x 20 samples) -> 8 joint angles."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(6, 16, 5, padding=2), nn.GELU(), nn.AdaptiveAvgPool1d(4))
        self.head = nn.Linear(64, 8)

    def forward(self, imu):
        return self.head(self.conv(imu).flatten(1))


class OptimizerHook:
    def __init__(self, grad_clip=None):
        self.grad_clip = grad_clip

    def after_train_iter(self, runner):
        runner.optimizer.zero_grad()
        runner.outputs["loss"].backward()
        if self.grad_clip is not None:
            nn.utils.clip_grad_norm_(runner.model.parameters(), **self.grad_clip)
        runner.optimizer.step()


class GradientCumulativeOptimizerHook(OptimizerHook):
    def __init__(self, grad_clip=None, cumulative_iters=1):
        super().__init__(grad_clip)
        self.cumulative_iters = cumulative_iters

    def after_train_iter(self, runner):
        loss = runner.outputs["loss"] / self.cumulative_iters
        loss.backward()
        if (runner.iter + 1) % self.cumulative_iters == 0:
            runner.optimizer.step()
            runner.optimizer.zero_grad()


HOOKS = {"OptimizerHook": OptimizerHook, "GradientCumulativeOptimizerHook": GradientCumulativeOptimizerHook}


class Runner:
    def __init__(self, model, optimizer, max_iters):
        self.model, self.optimizer, self.max_iters = model, optimizer, max_iters
        self.hooks, self.iter, self.outputs = [], 0, {}

    def register_hook(self, hook):
        self.hooks.append(hook)

    def train_step(self, batch):
        imu, angles = batch
        pred = self.model(imu)
        return {"loss": nn.functional.smooth_l1_loss(pred, angles), "num_samples": imu.shape[0]}

    def run(self, loader):
        self.model.train()
        for self.iter in range(self.max_iters):
            self.outputs = self.train_step(next(loader))
            for hook in self.hooks:
                hook.after_train_iter(self)
            print(f"iter {self.iter}: loss {self.outputs['loss'].item():.4f}")


def capture_stream(batch):
    while True:
        imu = torch.randn(batch, 6, 20)
        swing = imu[:, :3].mean(-1)
        angles = torch.cat([swing, swing.roll(1, 1), swing[:, :2] * 0.5], dim=1).tanh()
        yield imu, angles


def build_runner(cfg):
    model = BarToPose()
    optimizer = torch.optim.Adam(model.parameters(), **cfg["optimizer"])
    runner = Runner(model, optimizer, cfg["max_iters"])
    opt_spec = dict(cfg["optimizer_config"])
    runner.register_hook(HOOKS[opt_spec.pop("type", "OptimizerHook")](**opt_spec))
    for spec in cfg["custom_hooks"]:
        spec = dict(spec)
        runner.register_hook(HOOKS[spec.pop("type")](**spec))
    return runner


if __name__ == "__main__":
    runner = build_runner(CFG)
    runner.run(capture_stream(CFG["batch"]))
