"""Reduced from https://github.com/bayesiains/nflows/issues/89

The author was training a normalizing flow built from nflows' PiecewiseRationalQuadraticCouplingTransform
with a transform network of their own (an MLP exposing `hidden_features`, whose last layer is a ReLU).
The backward raised "one of the variables needed for gradient computation has been modified by an
inplace operation: [torch.cuda.FloatTensor [256, 71]], which is output 0 of ReluBackward0". The line
is nflows' scaling of the spline's parameters, `unnormalized_widths /= np.sqrt(hidden_features)` (and
the same for the heights): the widths and heights are slices of the transform network's output, which
its final ReLU saved for the backward. The author's fix: divide out of place,
`unnormalized_widths = unnormalized_widths / np.sqrt(...)`.

Here: the same coupling transform (nflows' layout and rational-quadratic spline, no tails, on the
unit square with a uniform base distribution) in a two-layer flow trained by maximum likelihood on
synthetic 2-D data, with a transform network shaped like the author's; seeded, on CPU.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)

DEFAULT_MIN_BIN_WIDTH = 1e-3
DEFAULT_MIN_BIN_HEIGHT = 1e-3
DEFAULT_MIN_DERIVATIVE = 1e-3


def searchsorted(bin_locations, inputs, eps=1e-6):
    bin_locations = bin_locations.clone()
    bin_locations[..., -1] += eps
    return torch.sum(inputs[..., None] >= bin_locations, dim=-1) - 1


def rational_quadratic_spline(inputs, unnormalized_widths, unnormalized_heights, unnormalized_derivatives,
                              left=0.0, right=1.0, bottom=0.0, top=1.0,
                              min_bin_width=DEFAULT_MIN_BIN_WIDTH, min_bin_height=DEFAULT_MIN_BIN_HEIGHT,
                              min_derivative=DEFAULT_MIN_DERIVATIVE):
    num_bins = unnormalized_widths.shape[-1]

    widths = F.softmax(unnormalized_widths, dim=-1)
    widths = min_bin_width + (1 - min_bin_width * num_bins) * widths
    cumwidths = torch.cumsum(widths, dim=-1)
    cumwidths = F.pad(cumwidths, pad=(1, 0), mode="constant", value=0.0)
    cumwidths = (right - left) * cumwidths + left
    cumwidths[..., 0] = left
    cumwidths[..., -1] = right
    widths = cumwidths[..., 1:] - cumwidths[..., :-1]

    derivatives = min_derivative + F.softplus(unnormalized_derivatives)

    heights = F.softmax(unnormalized_heights, dim=-1)
    heights = min_bin_height + (1 - min_bin_height * num_bins) * heights
    cumheights = torch.cumsum(heights, dim=-1)
    cumheights = F.pad(cumheights, pad=(1, 0), mode="constant", value=0.0)
    cumheights = (top - bottom) * cumheights + bottom
    cumheights[..., 0] = bottom
    cumheights[..., -1] = top
    heights = cumheights[..., 1:] - cumheights[..., :-1]

    bin_idx = searchsorted(cumwidths, inputs)[..., None]

    input_cumwidths = cumwidths.gather(-1, bin_idx)[..., 0]
    input_bin_widths = widths.gather(-1, bin_idx)[..., 0]
    input_cumheights = cumheights.gather(-1, bin_idx)[..., 0]
    delta = heights / widths
    input_delta = delta.gather(-1, bin_idx)[..., 0]
    input_derivatives = derivatives.gather(-1, bin_idx)[..., 0]
    input_derivatives_plus_one = derivatives[..., 1:].gather(-1, bin_idx)[..., 0]
    input_heights = heights.gather(-1, bin_idx)[..., 0]

    theta = (inputs - input_cumwidths) / input_bin_widths
    theta_one_minus_theta = theta * (1 - theta)
    numerator = input_heights * (input_delta * theta.pow(2) + input_derivatives * theta_one_minus_theta)
    denominator = input_delta + (
        (input_derivatives + input_derivatives_plus_one - 2 * input_delta) * theta_one_minus_theta)
    outputs = input_cumheights + numerator / denominator

    derivative_numerator = input_delta.pow(2) * (
        input_derivatives_plus_one * theta.pow(2)
        + 2 * input_delta * theta_one_minus_theta
        + input_derivatives * (1 - theta).pow(2))
    logabsdet = torch.log(derivative_numerator) - 2 * torch.log(denominator)
    return outputs, logabsdet


class TransformNet(nn.Module):
    """The author's conditioner: an MLP that ends with a ReLU and exposes hidden_features."""

    def __init__(self, in_features, out_features, hidden_features=32):
        super().__init__()
        self.hidden_features = hidden_features
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden_features), nn.ReLU(),
            nn.Linear(hidden_features, hidden_features), nn.ReLU(),
            nn.Linear(hidden_features, out_features), nn.ReLU(),
        )

    def forward(self, inputs, context=None):
        return self.net(inputs)


class PiecewiseRationalQuadraticCouplingTransform(nn.Module):
    def __init__(self, mask, transform_net_create_fn, num_bins=8):
        super().__init__()
        mask = torch.as_tensor(mask)
        self.register_buffer("identity_features", mask.le(0).nonzero().flatten())
        self.register_buffer("transform_features", mask.gt(0).nonzero().flatten())
        self.num_bins = num_bins
        self.transform_net = transform_net_create_fn(
            len(self.identity_features), len(self.transform_features) * self._transform_dim_multiplier())

    def _transform_dim_multiplier(self):
        return self.num_bins * 3 + 1

    def forward(self, inputs, context=None):
        identity_split = inputs[:, self.identity_features]
        transform_split = inputs[:, self.transform_features]
        transform_params = self.transform_net(identity_split, context)
        transform_params = transform_params.reshape(
            inputs.shape[0], len(self.transform_features), self._transform_dim_multiplier())
        transform_split, logabsdet = self._piecewise_cdf(transform_split, transform_params)
        outputs = torch.empty_like(inputs)
        outputs[:, self.identity_features] = identity_split
        outputs[:, self.transform_features] = transform_split
        return outputs, logabsdet.sum(dim=-1)

    def _piecewise_cdf(self, inputs, transform_params, inverse=False):
        unnormalized_widths = transform_params[..., : self.num_bins]
        unnormalized_heights = transform_params[..., self.num_bins: 2 * self.num_bins]
        unnormalized_derivatives = transform_params[..., 2 * self.num_bins:]

        if hasattr(self.transform_net, "hidden_features"):
            unnormalized_widths = unnormalized_widths / np.sqrt(self.transform_net.hidden_features)
            unnormalized_heights = unnormalized_heights / np.sqrt(self.transform_net.hidden_features)

        return rational_quadratic_spline(
            inputs=inputs,
            unnormalized_widths=unnormalized_widths,
            unnormalized_heights=unnormalized_heights,
            unnormalized_derivatives=unnormalized_derivatives,
        )


class Flow(nn.Module):
    """A composite of coupling transforms on the unit square, with a uniform base distribution."""

    def __init__(self, transforms):
        super().__init__()
        self.transforms = nn.ModuleList(transforms)

    def log_prob(self, inputs):
        total_logabsdet = inputs.new_zeros(inputs.shape[0])
        outputs = inputs
        for transform in self.transforms:
            outputs, logabsdet = transform(outputs)
            total_logabsdet = total_logabsdet + logabsdet
        return total_logabsdet  # log of the uniform base density on [0, 1]^2 is 0


def make_data(n=512):
    t = torch.rand(n) * np.pi
    upper = torch.stack([torch.cos(t), torch.sin(t)], dim=1)
    lower = torch.stack([1 - torch.cos(t), 0.5 - torch.sin(t)], dim=1)
    x = torch.where(torch.rand(n, 1) < 0.5, upper, lower) + 0.1 * torch.randn(n, 2)
    return torch.sigmoid(1.5 * (x - torch.tensor([0.5, 0.25])))


def train(flow, loader, optimizer, num_epochs=3):
    for epoch in range(num_epochs):
        total = 0.0
        for (x,) in loader:
            optimizer.zero_grad()
            loss = -flow.log_prob(x).mean()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(x)
        print(f"epoch {epoch}: nll {total / len(loader.dataset):.4f}")


if __name__ == "__main__":
    data = make_data()
    loader = DataLoader(TensorDataset(data), batch_size=128, shuffle=True)
    transforms = [
        PiecewiseRationalQuadraticCouplingTransform(
            mask=[1, -1] if i % 2 == 0 else [-1, 1],
            transform_net_create_fn=lambda in_f, out_f: TransformNet(in_f, out_f, hidden_features=32),
        )
        for i in range(4)
    ]
    flow = Flow(transforms)
    optimizer = torch.optim.Adam(flow.parameters(), lr=1e-3)
    train(flow, loader, optimizer)
