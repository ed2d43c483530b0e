"""PGD adversarial training of an image classifier, with a robust-accuracy evaluation after every epoch (advertorch style).

Source: https://github.com/BorealisAI/advertorch/issues/79

The author trains a small CNN with Madry-style adversarial training: every
training batch is replaced by its L-inf PGD adversarial version (an
advertorch-like ``LinfPGDAttack`` with random start, written out here), and the
model is trained on it with cross-entropy and SGD. After each epoch a
``test()`` function measures accuracy on adversarial test examples made by the
same adversary. Synthetic 1x12x12 "images" in [0, 1], 3 classes.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def clamp(x, lo, hi):
    return torch.max(torch.min(x, torch.full_like(x, hi)), torch.full_like(x, lo))


def perturb_iterative(xvar, yvar, predict, nb_iter, eps, eps_iter, loss_fn, delta, clip_min=0.0, clip_max=1.0):
    for _ in range(nb_iter):
        outputs = predict(xvar + delta)
        loss = loss_fn(outputs, yvar)
        loss.backward()
        grad_sign = delta.grad.data.sign()
        delta.data = delta.data + eps_iter * grad_sign
        delta.data = clamp(delta.data, -eps, eps)
        delta.data = clamp(xvar.data + delta.data, clip_min, clip_max) - xvar.data
        delta.grad.data.zero_()
    return clamp(xvar + delta, clip_min, clip_max)


class LinfPGDAttack:
    def __init__(self, predict, loss_fn=None, eps=0.3, nb_iter=5, eps_iter=0.1, rand_init=True,
                 clip_min=0.0, clip_max=1.0):
        self.predict = predict
        self.loss_fn = loss_fn if loss_fn is not None else nn.CrossEntropyLoss(reduction="sum")
        self.eps, self.nb_iter, self.eps_iter = eps, nb_iter, eps_iter
        self.rand_init = rand_init
        self.clip_min, self.clip_max = clip_min, clip_max

    def perturb(self, x, y):
        delta = nn.Parameter(torch.zeros_like(x))
        if self.rand_init:
            delta.data.uniform_(-self.eps, self.eps)
            delta.data = clamp(x + delta.data, self.clip_min, self.clip_max) - x
        rval = perturb_iterative(x, y, self.predict, self.nb_iter, self.eps, self.eps_iter, self.loss_fn, delta,
                                 self.clip_min, self.clip_max)
        return rval.data


class SmallCNN(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 3 * 3, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def make_loader(n, batch_size):
    x = torch.rand(n, 1, 12, 12)
    y = torch.randint(0, 3, (n,))
    return [(x[i : i + batch_size], y[i : i + batch_size]) for i in range(0, n, batch_size)]


trainloader = make_loader(32, 16)
testloader = make_loader(16, 8)

net = SmallCNN()
optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
adversary = LinfPGDAttack(net, loss_fn=nn.CrossEntropyLoss(reduction="sum"), eps=0.3, nb_iter=5, eps_iter=0.1)


def train(epoch):
    net.train()
    for batch_idx, (inputs, targets) in enumerate(trainloader):
        adv_inputs = adversary.perturb(inputs, targets)
        optimizer.zero_grad()
        outputs = net(adv_inputs)
        loss = F.cross_entropy(outputs, targets)
        loss.backward()
        optimizer.step()
        print(f"epoch {epoch} batch {batch_idx} loss {loss.item():.4f}")


def test(epoch):
    net.eval()
    correct, total = 0, 0
    with torch.no_grad():
        for batch_idx, (inputs, targets) in enumerate(testloader):
            adv_untargeted = adversary.perturb(inputs, targets)
            inputs = adv_untargeted

            outputs = net(inputs)
            correct += (outputs.argmax(1) == targets).sum().item()
            total += targets.size(0)
    print(f"epoch {epoch} robust accuracy {correct / total:.3f}")


for epoch in range(3):
    train(epoch)
    test(epoch)
