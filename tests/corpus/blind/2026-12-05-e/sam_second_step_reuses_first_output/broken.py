"""Reduced from https://github.com/davda54/sam/issues/45

The author was training an image classifier (an ImageNet-style main.py with train(train_loader,
model, criterion, optimizer, epoch, ...)) with SAM, sharpness-aware minimization: a first backward
gives the gradient used to move the weights to the worst nearby point (first_step), and a second
backward at that point gives the gradient of the actual update (second_step). The author computed
`output = model(images)` once and wrote the second pass as `criterion(output, target).backward()`,
which raised "Trying to backward through the graph a second time". The maintainer's answer (also in
#10 and the README): the second pass must be a full forward-backward pass, `criterion(model(images),
target).backward()`, because its gradient has to be taken at the perturbed weights.

Here the same loop on a small CNN and random 16x16 images; the SAM class is the usual
first_step/second_step wrapper around a base optimizer.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, rho=0.05, **kwargs):
        defaults = dict(rho=rho, **kwargs)
        super().__init__(params, defaults)
        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
        self.param_groups = self.base_optimizer.param_groups

    @torch.no_grad()
    def first_step(self, zero_grad=False):
        grad_norm = torch.norm(torch.stack([
            p.grad.norm(p=2) for group in self.param_groups for p in group["params"] if p.grad is not None
        ]), p=2)
        for group in self.param_groups:
            scale = group["rho"] / (grad_norm + 1e-12)
            for p in group["params"]:
                if p.grad is None:
                    continue
                e_w = p.grad * scale
                p.add_(e_w)  # climb to the local maximum "w + e(w)"
                self.state[p]["e_w"] = e_w
        if zero_grad:
            self.zero_grad()

    @torch.no_grad()
    def restore_weights(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.sub_(self.state[p]["e_w"])  # get back to "w" from "w + e(w)"

    @torch.no_grad()
    def second_step(self, zero_grad=False):
        self.restore_weights()
        self.base_optimizer.step()  # do the actual "sharpness-aware" update
        if zero_grad:
            self.zero_grad()


class SmallCNN(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.fc = nn.Linear(32 * 4 * 4, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(x.flatten(1))


def accuracy(output, target):
    return (output.argmax(1) == target).float().mean() * 100


def train(train_loader, model, criterion, optimizer, epoch):
    model.train()
    losses, top1 = 0.0, 0.0
    for images, target in train_loader:
        # compute output
        output = model(images)

        # first forward-backward pass
        loss = criterion(output, target)  # use this loss for any training statistics
        loss.backward()
        optimizer.first_step(zero_grad=True)

        # second forward-backward pass
        criterion(output, target).backward()  # make sure to do a full forward pass
        optimizer.second_step(zero_grad=True)

        losses += loss.item()
        top1 += accuracy(output, target).item()
    n = len(train_loader)
    print(f"epoch {epoch}: loss {losses / n:.4f} acc@1 {top1 / n:.1f}")


images = torch.randn(128, 3, 16, 16)
labels = torch.randint(0, 10, (128,))
train_loader = [(images[i:i + 16], labels[i:i + 16]) for i in range(0, 128, 16)]

model = SmallCNN()
criterion = nn.CrossEntropyLoss()
base_optimizer = torch.optim.SGD
optimizer = SAM(model.parameters(), base_optimizer, rho=0.05, lr=0.05, momentum=0.9, weight_decay=5e-4)

for epoch in range(3):
    train(train_loader, model, criterion, optimizer, epoch)
