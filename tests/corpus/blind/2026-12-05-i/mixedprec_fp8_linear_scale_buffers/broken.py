"""FP8 training of a small MLP classifier with per-tensor scaling.

Reduced from https://github.com/facebookexperimental/protoquant/pull/25: the author ran the
float8 proof of concept (a ``Float8Linear`` that swaps in for ``nn.Linear``, casts its input and
weight to float8 with a per-tensor scale kept in module buffers, "stateful scaling" ready for
delayed scaling) inside an ordinary training loop. Here the float8 cast is emulated on CPU with
``torch.float8_e4m3fn`` round trips; a synthetic 4-class problem, AdamW.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

E4M3_MAX_POS = torch.finfo(torch.float8_e4m3fn).max
EPS = 1e-12


def amax_to_scale(amax):
    return E4M3_MAX_POS / torch.clamp(amax, min=EPS)


def tensor_to_scale(x):
    amax = torch.max(torch.abs(x))
    return amax_to_scale(amax)


class ToFloat8(torch.autograd.Function):
    """Cast to float8 (emulated: quantize, then keep the dequantized float32); the gradient passes straight through."""

    @staticmethod
    def forward(ctx, x, scale):
        bits = (x * scale).clamp(-E4M3_MAX_POS, E4M3_MAX_POS).to(torch.float8_e4m3fn)
        return bits.to(torch.float32) / scale

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out, None


class Float8Linear(nn.Linear):
    """nn.Linear with float8 inputs and weights; scales are kept in buffers for delayed scaling later."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register_buffer("fp8_s_in", torch.tensor(1.0))
        self.register_buffer("fp8_s_weight", torch.tensor(1.0))

    def forward(self, x):
        # TODO(future): switch to delayed scaling
        self.fp8_s_in.fill_(tensor_to_scale(x))
        x_fp8 = ToFloat8.apply(x, self.fp8_s_in)
        self.fp8_s_weight.fill_(tensor_to_scale(self.weight))
        w_fp8 = ToFloat8.apply(self.weight, self.fp8_s_weight)
        return F.linear(x_fp8, w_fp8, self.bias)

    @classmethod
    def from_float(cls, mod):
        new_mod = cls(mod.in_features, mod.out_features, bias=mod.bias is not None)
        new_mod.weight = mod.weight
        new_mod.bias = mod.bias
        return new_mod


def swap_linear_with_float8_linear(model):
    for name, child in model.named_children():
        if isinstance(child, nn.Linear):
            setattr(model, name, Float8Linear.from_float(child))
        else:
            swap_linear_with_float8_linear(child)
    return model


class MLP(nn.Module):
    def __init__(self, d_in=16, d_hidden=32, n_classes=4):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(d_hidden, n_classes)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def main():
    torch.manual_seed(0)
    inputs = torch.randn(128, 16)
    targets = torch.randint(0, 4, (128,))

    model = swap_linear_with_float8_linear(MLP())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    for epoch in range(2):
        for start in range(0, 128, 32):
            x, y = inputs[start : start + 32], targets[start : start + 32]
            optimizer.zero_grad()
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
