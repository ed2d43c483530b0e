"""Domain adaptation (DANN): a gradient-reversal autograd.Function trains features that a domain classifier cannot tell apart."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lam):
        ctx.lam = lam
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg() * ctx.lam, None


def make_domain(n, shift):
    y = torch.randint(0, 2, (n,))
    x = torch.randn(n, 6) + 1.5 * (2 * y[:, None].float() - 1)
    return x + shift, y


class DANN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 16))
        self.label_head = nn.Linear(16, 2)
        self.domain_head = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x, lam):
        f = torch.tanh(self.features(x))
        return self.label_head(f), self.domain_head(GradReverse.apply(f, lam)).squeeze(1)


def main():
    xs, ys = make_domain(128, shift=0.0)
    xt, _ = make_domain(128, shift=torch.tensor([1.0, -1.0, 0.5, 0.0, 0.0, 0.5]))
    model = DANN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(2):
        for i in range(0, 128, 32):
            lam = 0.1 * (epoch + 1)
            x = torch.cat([xs[i : i + 32], xt[i : i + 32]])
            domain = torch.cat([torch.zeros(32), torch.ones(32)])
            class_logits, domain_logits = model(x, lam)
            class_loss = F.cross_entropy(class_logits[:32], ys[i : i + 32])
            domain_loss = F.binary_cross_entropy_with_logits(domain_logits, domain)
            loss = class_loss + domain_loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: class {class_loss.item():.3f} domain {domain_loss.item():.3f}")


if __name__ == "__main__":
    main()
