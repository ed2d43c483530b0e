"""Diamond cut grading from light-return maps, with a gradient monitor hooked on one block.

Source: https://github.com/pytorch/pytorch/issues/61519
The author uses ``register_full_backward_hook`` to capture a module's gradients (for CAM) and the
network applies an in-place ReLU to that module's output; since the hook wraps the module's outputs
in a custom autograd Function, the in-place ReLU raises "Output 0 of BackwardHookFunctionBackward
is a view and is being modified inplace". The answer on the issue: the in-place op on the hooked
module's output is what is forbidden; make the activation out-of-place. This script reduces it to
a training run: a grading CNN whose blocks end in a shared ``nn.ReLU(inplace=True)``, and a
gradient-norm monitor that hooks the pavilion block with a full backward hook.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

GRADES = ["excellent", "very_good", "good", "fair", "poor"]
SETTINGS = {"img": 24, "batch": 20, "steps": 4, "lr": 3e-3}


def light_return_maps(n):
    """Synthetic ASET-style light-return images and the stone's table % / depth % proportions."""
    img = torch.rand(n, 3, SETTINGS["img"], SETTINGS["img"])
    proportions = torch.stack([img[:, 0].mean((1, 2)), img[:, 2].std((1, 2))], dim=1)
    score = img[:, 1, 8:16, 8:16].mean((1, 2)) - 0.5 * proportions[:, 1]
    grade = torch.bucketize(score, torch.tensor([0.30, 0.40, 0.50, 0.60])).clamp(max=len(GRADES) - 1)
    return img, 4 - grade, proportions


class CutGrader(nn.Module):
    def __init__(self):
        super().__init__()
        self.crown_block = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16))
        self.pavilion_block = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1, stride=2), nn.BatchNorm2d(32))
        self.girdle_block = nn.Sequential(nn.Conv2d(32, 32, 3, padding=1, stride=2), nn.BatchNorm2d(32))
        self.act = nn.ReLU(inplace=True)
        self.grade_head = nn.Linear(32, len(GRADES))
        self.prop_head = nn.Linear(32, 2)

    def forward(self, x):
        x = self.act(self.crown_block(x))
        x = self.act(self.pavilion_block(x))
        x = self.act(self.girdle_block(x))
        feat = x.mean(dim=(2, 3))
        return self.grade_head(feat), self.prop_head(feat)


class GradNormMonitor:
    """Records the norm of the gradient flowing out of one block, for the training log."""

    def __init__(self, module):
        self.norms = []
        self.handle = module.register_full_backward_hook(self._hook)

    def _hook(self, module, grad_input, grad_output):
        self.norms.append(grad_output[0].norm().item())


def train():
    grader = CutGrader()
    monitor = GradNormMonitor(grader.pavilion_block)
    opt = torch.optim.Adam(grader.parameters(), lr=SETTINGS["lr"])
    for step in range(SETTINGS["steps"]):
        img, grade, proportions = light_return_maps(SETTINGS["batch"])
        grade_logits, prop_pred = grader(img)
        grade_loss = F.cross_entropy(grade_logits, grade)
        proportion_loss = F.smooth_l1_loss(prop_pred, proportions)
        opt.zero_grad()
        (grade_loss + 0.3 * proportion_loss).backward()
        opt.step()
        print(f"step {step} grade={grade_loss.item():.4f} prop={proportion_loss.item():.4f} "
              f"pavilion_grad={monitor.norms[-1]:.4f}")


if __name__ == "__main__":
    train()
