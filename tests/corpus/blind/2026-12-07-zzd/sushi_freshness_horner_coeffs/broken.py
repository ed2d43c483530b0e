"""Sushi-grade fish freshness: predict the freshness curve of a fillet over storage hours.

Source: https://github.com/pytorch/pytorch/pull/43002 -- in the review of the LOBPCG backward, the
author turns the roots of a polynomial into its coefficients with Horner's rule,
``poly_coeffs[..., j] -= roots[..., i - 1] * poly_coeffs[..., j + 1]``, and gradgradcheck with anomaly
detection points at that line: the multiplication saves ``poly_coeffs`` for its backward and the same
tensor is then changed in place (albanD's answer in the review).

Reduction: a small network reads a fillet's sensor profile (colour, pH, impedance, K-value proxy,
temperature log) and predicts the roots of its freshness-decay polynomial; the coefficients are
expanded from the roots with the same in-place Horner loop, the polynomial is evaluated at the
inspection hours and fit to the graders' scores.
"""
import torch
import torch.nn as nn

torch.manual_seed(3)

HP = dict(sensors=10, degree=3, fillets=64, batch=16, epochs=2, lr=5e-3)
INSPECTION_HOURS = torch.tensor([0.0, 6.0, 12.0, 24.0, 36.0, 48.0]) / 48.0


def synthetic_fillets(n, d):
    profile = torch.randn(n, d)
    decay = 0.5 + 0.4 * torch.sigmoid(profile[:, :3].sum(1, keepdim=True))
    scores = 1.0 - decay * INSPECTION_HOURS.unsqueeze(0) ** 1.5 + 0.02 * torch.randn(n, len(INSPECTION_HOURS))
    return profile, scores


def roots_to_coeffs(roots):
    """Monic polynomial coefficients (constant term first) from its roots, by Horner's rule."""
    order = roots.shape[-1]
    shape = list(roots.shape)
    shape[-1] += 1
    coeffs = roots.new_zeros(shape)
    coeffs[..., -1] = 1
    for i in range(1, order + 1):
        for j in range(order - i, order):
            coeffs[..., j] -= roots[..., i - 1] * coeffs[..., j + 1]
    return coeffs


def evaluate_poly(coeffs, t):
    powers = torch.stack([t ** k for k in range(coeffs.shape[-1])], dim=0)  # (deg+1, T)
    return coeffs @ powers


class FreshnessCurve(nn.Module):
    def __init__(self, n_sensors, degree):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(n_sensors, 32), nn.SiLU(), nn.Linear(32, degree))
        self.scale = nn.Linear(n_sensors, 1)

    def forward(self, profile):
        roots = 1.0 + nn.functional.softplus(self.encoder(profile))
        coeffs = roots_to_coeffs(roots)
        shape = evaluate_poly(coeffs, INSPECTION_HOURS)
        return shape / shape[:, :1] * torch.sigmoid(self.scale(profile))


def run(hp):
    profile, scores = synthetic_fillets(hp["fillets"], hp["sensors"])
    grader = FreshnessCurve(hp["sensors"], hp["degree"])
    optim = torch.optim.Adam(grader.parameters(), lr=hp["lr"])
    for epoch in range(hp["epochs"]):
        for start in range(0, hp["fillets"], hp["batch"]):
            p = profile[start:start + hp["batch"]]
            s = scores[start:start + hp["batch"]]
            curve = grader(p)
            fit_loss = nn.functional.smooth_l1_loss(curve, s)
            optim.zero_grad()
            fit_loss.backward()
            optim.step()
        print(f"epoch {epoch}: fit {fit_loss.item():.4f}")


if __name__ == "__main__":
    run(HP)
