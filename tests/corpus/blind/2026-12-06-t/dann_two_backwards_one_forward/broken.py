"""DANN: feature extractor, label classifier and a domain classifier behind a gradient reversal layer.

Source: https://github.com/naver-ai/StyleMapGAN/issues/16. There one forward of the model returned two
losses (the adversarial loss and a latent reconstruction loss through the same encoder and generator),
and the training step called ``backward()`` on the first and then on the second; the second call failed
with "Trying to backward through the graph a second time". The author's fix, which the issue asks the
maintainers to confirm, is to backpropagate both losses in one go, as their weighted sum. The training
setting is the writer's: a DANN step computes the source classification loss and the domain loss
(through the gradient reversal layer) from one forward of the shared feature extractor, and
backpropagates them one after the other.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

DIM, CLASSES, BATCH, STEPS = 20, 4, 32, 40


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg() * ctx.alpha, None


class DANN(nn.Module):
    def __init__(self):
        super().__init__()
        self.feature = nn.Sequential(nn.Linear(DIM, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU())
        self.class_classifier = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, CLASSES))
        self.domain_classifier = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, x, alpha):
        feature = self.feature(x)
        class_output = self.class_classifier(feature)
        domain_output = self.domain_classifier(GradReverse.apply(feature, alpha))
        return class_output, domain_output


def make_domain(n, shift, scale):
    y = torch.randint(0, CLASSES, (n,))
    protos = torch.linspace(-2, 2, CLASSES)[:, None] * torch.ones(CLASSES, DIM)
    x = (protos[y] + torch.randn(n, DIM)) * scale + shift
    return x, y


source_x, source_y = make_domain(512, 0.0, 1.0)
target_x, target_y = make_domain(512, 1.5, 1.3)

net = DANN()
optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

for step in range(STEPS):
    p = step / STEPS
    alpha = 2.0 / (1.0 + math.exp(-10 * p)) - 1
    si = torch.randint(0, 512, (BATCH,))
    ti = torch.randint(0, 512, (BATCH,))
    x = torch.cat([source_x[si], target_x[ti]])
    domain_label = torch.cat([torch.zeros(BATCH), torch.ones(BATCH)]).long()

    class_output, domain_output = net(x, alpha)
    err_s_label = F.cross_entropy(class_output[:BATCH], source_y[si])
    err_domain = F.cross_entropy(domain_output, domain_label)

    optimizer.zero_grad()
    err_s_label.backward()
    err_domain.backward()
    optimizer.step()

    if step % 10 == 0:
        with torch.no_grad():
            net.eval()
            acc = (net(target_x, 0.0)[0].argmax(1) == target_y).float().mean()
            net.train()
        print(f"step {step} label {err_s_label.item():.3f} domain {err_domain.item():.3f} target acc {acc:.3f}")
