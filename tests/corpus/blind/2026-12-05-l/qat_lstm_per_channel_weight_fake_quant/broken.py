"""Quantization-aware training of an LSTM sequence classifier with per-channel weight fake quantization.

Reduced from https://github.com/pytorch/pytorch/issues/61625: the author trains an LSTM with QAT, the
cell unrolled by hand so that its input-hidden and hidden-hidden weights go through the weight
fake-quantize module of `torch.quantization`'s default per-channel QAT qconfig (a moving-average
per-channel min/max observer and a FakeQuantize that refreshes its `scale` and `zero_point` buffers
from the observer, as torch 1.9 implemented them; written out here) at every time step, so the
fake-quantize modules run several times per forward.
"""

import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)

SEQ_LEN = 6
N_FEATURES = 8
HIDDEN = 16
N_CLASSES = 4
BATCH = 16


class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class MovingAveragePerChannelMinMaxObserver(nn.Module):
    def __init__(self, averaging_constant=0.01, ch_axis=0, quant_min=-128, quant_max=127):
        super().__init__()
        self.averaging_constant = averaging_constant
        self.ch_axis = ch_axis
        self.quant_min, self.quant_max = quant_min, quant_max
        self.register_buffer("min_val", torch.tensor([]))
        self.register_buffer("max_val", torch.tensor([]))

    def forward(self, x_orig):
        x = x_orig.detach().transpose(0, self.ch_axis).flatten(1)
        min_val, max_val = x.min(1).values, x.max(1).values
        if self.min_val.numel() == 0:
            self.min_val.resize_(min_val.shape)
            self.max_val.resize_(max_val.shape)
            self.min_val.copy_(min_val)
            self.max_val.copy_(max_val)
        else:
            self.min_val.copy_(self.min_val + self.averaging_constant * (min_val - self.min_val))
            self.max_val.copy_(self.max_val + self.averaging_constant * (max_val - self.max_val))
        return x_orig

    def calculate_qparams(self):
        max_abs = torch.max(-self.min_val, self.max_val)
        scale = (max_abs / ((self.quant_max - self.quant_min) / 2)).clamp(min=1e-8)
        zero_point = torch.zeros_like(scale)
        return scale, zero_point


class FakeQuantize(nn.Module):
    def __init__(self, ch_axis=0, quant_min=-128, quant_max=127):
        super().__init__()
        self.activation_post_process = MovingAveragePerChannelMinMaxObserver(ch_axis=ch_axis)
        self.quant_min, self.quant_max = quant_min, quant_max
        self.ch_axis = ch_axis
        self.register_buffer("scale", torch.tensor([1.0]))
        self.register_buffer("zero_point", torch.tensor([0.0]))
        self.observer_enabled = True
        self.fake_quant_enabled = True

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def forward(self, X):
        if self.observer_enabled:
            self.activation_post_process(X.detach())
            _scale, _zero_point = self.calculate_qparams()
            if self.scale.shape != _scale.shape:
                self.scale.resize_(_scale.shape)
                self.zero_point.resize_(_zero_point.shape)
            self.scale.copy_(_scale)
            self.zero_point.copy_(_zero_point)
        if self.fake_quant_enabled:
            X = fake_quantize_per_channel_affine(X, self.scale, self.zero_point, self.quant_min, self.quant_max)
        return X


def fake_quantize_per_channel_affine(x, scale, zero_point, quant_min, quant_max):
    scale, zero_point = scale[:, None], zero_point[:, None]
    x_int = RoundSTE.apply(x / scale + zero_point).clamp(quant_min, quant_max)
    return (x_int - zero_point) * scale


class QATLSTMClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight_ih = nn.Parameter(torch.randn(4 * HIDDEN, N_FEATURES) / N_FEATURES**0.5)
        self.weight_hh = nn.Parameter(torch.randn(4 * HIDDEN, HIDDEN) / HIDDEN**0.5)
        self.bias = nn.Parameter(torch.zeros(4 * HIDDEN))
        self.weight_ih_fake_quant = FakeQuantize()
        self.weight_hh_fake_quant = FakeQuantize()
        self.classifier = nn.Linear(HIDDEN, N_CLASSES)

    def cell(self, x_t, h, c):
        w_ih = self.weight_ih_fake_quant(self.weight_ih)
        w_hh = self.weight_hh_fake_quant(self.weight_hh)
        gates = F.linear(x_t, w_ih) + F.linear(h, w_hh) + self.bias
        i, f, g, o = gates.chunk(4, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, c

    def forward(self, x):
        h = x.new_zeros(x.shape[0], HIDDEN)
        c = x.new_zeros(x.shape[0], HIDDEN)
        for t in range(x.shape[1]):
            h, c = self.cell(x[:, t], h, c)
        return self.classifier(h)


def train_one_epoch(model, optimizer, batches):
    model.train()
    for step, (x, y) in enumerate(batches):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step}: loss {loss.item():.4f}")


def main():
    batches = [(torch.randn(BATCH, SEQ_LEN, N_FEATURES), torch.randint(0, N_CLASSES, (BATCH,))) for _ in range(4)]
    model = QATLSTMClassifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        train_one_epoch(model, optimizer, batches)


if __name__ == "__main__":
    main()
