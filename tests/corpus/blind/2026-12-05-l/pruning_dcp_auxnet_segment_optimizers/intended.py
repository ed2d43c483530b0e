"""Discrimination-aware channel pruning (DCP): training the auxiliary network before channel selection.

Reduced from https://github.com/SCUT-AILab/DCP/issues/20: the author channel-prunes a pre-activation
ResNet on CIFAR-10 with DCP, on PyTorch 1.6. Its `AuxTrainer` splits the network into segments at the
pivot layers and gives each segment an auxiliary classifier; the i-th segment optimizer holds the
segments 0..i, the i-th fc optimizer the i-th classifier. Every step, one forward through the segments
gives one loss per auxiliary classifier; each loss is then backwarded (its segment gradients scaled by
the pivot weight) and its two optimizers stepped, in turn.
"""

import torch
from torch import nn

torch.manual_seed(0)

N_CLASSES = 10
BATCH = 8


class PreBasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.downsample = None
        if stride != 1 or in_planes != planes:
            self.downsample = nn.Conv2d(in_planes, planes, 1, stride, bias=False)

    def forward(self, x):
        out = self.relu(self.bn1(x))
        residual = self.downsample(out) if self.downsample is not None else x
        out = self.conv1(out)
        out = self.conv2(self.relu(self.bn2(out)))
        return out + residual


class AuxClassifier(nn.Module):
    def __init__(self, in_planes, num_classes):
        super().__init__()
        self.bn = nn.BatchNorm2d(in_planes)
        self.relu = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(in_planes, num_classes)

    def forward(self, x):
        out = self.pool(self.relu(self.bn(x)))
        return self.fc(out.flatten(1))


def scale_segment_grads(optimizer, weight):
    for param_group in optimizer.param_groups:
        for p in param_group["params"]:
            if p.grad is None:
                continue
            p.grad.data.mul_(p.new([weight]))


def set_grads(optimizer, grads):
    params = [p for g in optimizer.param_groups for p in g["params"]]
    for p, grad in zip(params, grads):
        p.grad = grad


class AuxTrainer:
    """Trainer for the auxiliary network (DCP's aux_trainer.py, reduced)."""

    def __init__(self, segments, aux_fc, lr=0.1, momentum=0.9, weight_decay=1e-4):
        self.segments = segments
        self.aux_fc = aux_fc
        self.criterion = nn.CrossEntropyLoss()
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.seg_optimizer = []
        self.fc_optimizer = []
        self.set_loss_weight()

    def set_loss_weight(self):
        self.lr_weight = torch.ones(len(self.segments))
        self.pivot_weight = [1.0 / (len(self.segments) - i) for i in range(len(self.segments))]

    def create_optimizers(self):
        for i in range(len(self.segments)):
            temp_optim = []
            # from the i-th optimizer contains [0:i] segments
            for j in range(i + 1):
                temp_optim.append({"params": self.segments[j].parameters(), "lr": self.lr})
            temp_seg_optim = torch.optim.SGD(
                temp_optim, momentum=self.momentum, weight_decay=self.weight_decay, nesterov=True
            )
            temp_fc_optim = torch.optim.SGD(
                params=self.aux_fc[i].parameters(),
                lr=self.lr,
                momentum=self.momentum,
                weight_decay=self.weight_decay,
                nesterov=True,
            )
            self.seg_optimizer.append(temp_seg_optim)
            self.fc_optimizer.append(temp_fc_optim)
        return self.seg_optimizer, self.fc_optimizer

    @staticmethod
    def adjustweight(lr_weight=1.0):
        return 1.0 / lr_weight

    def auxnet_forward(self, images, labels=None):
        outputs = []
        temp_input = images
        losses = []
        for i in range(len(self.segments)):
            temp_output = self.segments[i](temp_input)
            fcs_output = self.aux_fc[i](temp_output)
            outputs.append(fcs_output)
            if labels is not None:
                losses.append(self.criterion(fcs_output, labels))
            temp_input = temp_output
        return outputs, losses

    def auxnet_backward_for_loss_i(self, loss, i):
        self.seg_optimizer[i].zero_grad()
        self.fc_optimizer[i].zero_grad()

        if i < len(self.seg_optimizer) - 1:
            for param_group in self.seg_optimizer[i].param_groups:
                param_group["lr"] = self.lr * self.adjustweight(self.lr_weight[i].item())
            loss.backward(retain_graph=True)
            scale_segment_grads(self.seg_optimizer[i], self.pivot_weight[i])
        else:
            loss.backward(retain_graph=True)

        # keep this loss's gradients: the next loss's zero_grad clears the shared segments
        return [
            [None if p.grad is None else p.grad.clone() for g in opt.param_groups for p in g["params"]]
            for opt in (self.fc_optimizer[i], self.seg_optimizer[i])
        ]

    def auxnet_step_i(self, grads, i):
        for opt, opt_grads in zip((self.fc_optimizer[i], self.seg_optimizer[i]), grads):
            set_grads(opt, opt_grads)
            opt.step()

    def train(self, epoch, train_loader):
        for i in range(len(self.segments)):
            self.segments[i].train()
            self.aux_fc[i].train()
        for i, (images, labels) in enumerate(train_loader):
            outputs, losses = self.auxnet_forward(images, labels)
            # every loss's gradients from this forward's weights, before any optimizer changes them
            grads = [self.auxnet_backward_for_loss_i(losses[j], j) for j in range(len(self.seg_optimizer))]
            for j in range(len(self.seg_optimizer)):
                self.auxnet_step_i(grads[j], j)
            print(f"epoch {epoch} iter {i}: " + ", ".join(f"{loss.item():.3f}" for loss in losses))


def main():
    # pre-activation ResNet split at the pivot layers into three segments
    segments = [
        nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), PreBasicBlock(8, 8)),
        nn.Sequential(PreBasicBlock(8, 16, stride=2)),
        nn.Sequential(PreBasicBlock(16, 32, stride=2)),
    ]
    aux_fc = [AuxClassifier(8, N_CLASSES), AuxClassifier(16, N_CLASSES), AuxClassifier(32, N_CLASSES)]
    train_loader = [(torch.randn(BATCH, 3, 16, 16), torch.randint(0, N_CLASSES, (BATCH,))) for _ in range(4)]

    trainer = AuxTrainer(segments, aux_fc)
    seg_optimizer, fc_optimizer = trainer.create_optimizers()
    for epoch in range(2):
        trainer.train(epoch, train_loader)


if __name__ == "__main__":
    main()
