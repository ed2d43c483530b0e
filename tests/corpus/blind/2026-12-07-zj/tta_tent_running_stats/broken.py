"""TENT-style test-time adaptation with a hand-written batch norm that keeps test-time running statistics.

Reduced from the PyTorch forum thread "Implementing Batchnorm in Pytorch. Problem with updating
self.running_mean and self.running_var"
(https://discuss.pytorch.org/t/implementing-batchnorm-in-pytorch-problem-with-updating-self-running-mean-and-self-running-var/49314):
the author wrote BatchNorm from scratch, updated ``self.running_mean`` / ``self.running_var`` with an
ordinary out-of-place expression of the batch mean and variance (``self.running_mean = momentum *
self.running_mean + (1 - momentum) * mean``) and then normalised with ``mean = self.running_mean``.
The running estimate keeps the graph of every batch it has seen, so the second ``backward`` goes back
into the first batch's freed graph. The training setting is the writer's: a classifier is adapted on
unlabelled, shifted test batches by minimising prediction entropy, only the batch-norm affine
parameters being trained (TENT), with the norm layers blending test statistics across batches.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class TestTimeBatchNorm2d(nn.Module):
    def __init__(self, num_features, momentum=0.9, eps=1e-5):
        super().__init__()
        self.momentum = momentum
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x):
        mean = x.mean([0, 2, 3])
        var = x.var([0, 2, 3], unbiased=False)
        n = x.numel() / x.size(1)
        # blend the test statistics into the running estimate and normalise with it
        self.running_mean = self.momentum * self.running_mean + (1.0 - self.momentum) * mean
        self.running_var = self.momentum * self.running_var + (1.0 - self.momentum) * var * n / (n - 1)
        mean = self.running_mean
        var = self.running_var
        x_hat = (x - mean[None, :, None, None]) / torch.sqrt(var[None, :, None, None] + self.eps)
        return x_hat * self.weight[None, :, None, None] + self.bias[None, :, None, None]


class SmallResNetish(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = TestTimeBatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False)
        self.bn2 = TestTimeBatchNorm2d(32)
        self.conv3 = nn.Conv2d(32, 32, 3, padding=1, bias=False)
        self.bn3 = TestTimeBatchNorm2d(32)
        self.head = nn.Linear(32, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = x + F.relu(self.bn3(self.conv3(x)))
        return self.head(x.mean([2, 3]))


def softmax_entropy(logits):
    return -(logits.softmax(1) * logits.log_softmax(1)).sum(1)


def configure_tent(model):
    """Freeze everything but the norm layers' affine parameters."""
    model.train()
    model.requires_grad_(False)
    params = []
    for module in model.modules():
        if isinstance(module, TestTimeBatchNorm2d):
            module.weight.requires_grad_(True)
            module.bias.requires_grad_(True)
            params += [module.weight, module.bias]
    return params


def corrupted_test_stream(n_batches, batch_size=32):
    """Synthetic 'corrupted' images: shifted contrast and additive noise."""
    for _ in range(n_batches):
        clean = torch.randn(batch_size, 3, 16, 16)
        yield 1.7 * clean + 0.4 + 0.3 * torch.randn_like(clean)


model = SmallResNetish()
tent_params = configure_tent(model)
optimizer = torch.optim.Adam(tent_params, lr=1e-3, betas=(0.9, 0.999))

for step, images in enumerate(corrupted_test_stream(6)):
    logits = model(images)
    entropy_loss = softmax_entropy(logits).mean()
    optimizer.zero_grad()
    entropy_loss.backward()
    optimizer.step()
    preds = logits.argmax(1)
    print(f"batch {step}: entropy {entropy_loss.item():.4f}, class histogram {torch.bincount(preds, minlength=10).tolist()}")
