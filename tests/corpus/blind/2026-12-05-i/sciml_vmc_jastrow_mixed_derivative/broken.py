"""Variational Monte Carlo: optimising a Slater-Jastrow-like wave function on its local energy.

Reduced from https://github.com/NLESC-JCER/QMCTorch/issues/30: the author optimised a QMCTorch
wave function (orbitals times a two-body Pade-Jastrow factor whose analytic first and second
derivatives give the kinetic energy) with ``grad='auto'``, i.e. by backpropagating the mean local
energy. Here: 3 electrons around one nucleus, hydrogen-like orbitals exp(-alpha r), walkers drawn
once from a Gaussian instead of a Metropolis sampler, Adam, CPU.
"""

import torch
import torch.nn as nn

NELEC, NDIM, NWALKERS, Z_NUC = 3, 3, 64, 3.0


def edist(pos):
    """Upper-triangle e-e distances and their first/second derivatives wrt the first electron of each pair."""
    nbatch = pos.shape[0]
    xyz = pos.view(nbatch, NELEC, NDIM)
    i, j = torch.triu_indices(NELEC, NELEC, offset=1)
    diff = xyz[:, i, :] - xyz[:, j, :]  # (nbatch, npairs, 3)
    r = diff.norm(dim=-1)  # (nbatch, npairs)
    dr = (diff / r.unsqueeze(-1)).transpose(1, 2)  # (nbatch, 3, npairs)
    d2r = (1.0 - dr**2) / r.unsqueeze(1)
    return r, dr, d2r


class TwoBodyJastrowFactor(nn.Module):
    def __init__(self, nup, ndown, w=1.0):
        super().__init__()
        self.nelec = nup + ndown
        self.weight = nn.Parameter(torch.tensor([w]))
        self.index_row, self.index_col = torch.triu_indices(self.nelec, self.nelec, offset=1)
        spins = torch.tensor([0] * nup + [1] * ndown)
        same = spins[self.index_row] == spins[self.index_col]
        self.static_weight = torch.where(same, 0.25, 0.5)
        self._get_index_partial_derivative()

    def _single_index(self, i, j):
        n = self.nelec
        return int((n * (n - 1) / 2) - (n - i) * ((n - i) - 1) / 2 + j - i - 1)

    def _get_index_partial_derivative(self):
        self.index_partial_der, weights, to_elec = [], [], []
        for idx in range(self.nelec):
            pairs = [(idx, j, 1.0) for j in range(idx + 1, self.nelec)] + [(j, idx, -1.0) for j in range(idx)]
            for p1 in range(len(pairs) - 1):
                i1, j1, w1 = pairs[p1]
                for p2 in range(p1 + 1, len(pairs)):
                    i2, j2, w2 = pairs[p2]
                    self.index_partial_der.append([self._single_index(i1, j1), self._single_index(i2, j2)])
                    weights.append(w1 * w2)
                    to_elec.append(idx)
        self.weight_partial_der = torch.tensor(weights)
        self.index_partial_der_to_elec = torch.tensor(to_elec)

    def forward(self, pos, derivative=0):
        nbatch = pos.shape[0]
        r, dr, d2r = edist(pos)
        jast = torch.exp(self.static_weight * r / (1.0 + self.weight * r))
        if derivative == 0:
            return jast.prod(1).view(nbatch, 1)
        if derivative == 1:
            return self._jastrow_derivative(r, dr, jast)
        return self._jastrow_second_derivative(r, dr, d2r, jast)

    def _get_der_jastrow_elements(self, r, dr):
        r_ = r.unsqueeze(1)
        denom = 1.0 / (1.0 + self.weight * r_)
        a = self.static_weight * dr * denom
        b = -self.static_weight * self.weight * r_ * dr * denom**2
        return a + b

    def _get_second_der_jastrow_elements(self, r, dr, d2r):
        r_ = r.unsqueeze(1)
        denom = 1.0 / (1.0 + self.weight * r_)
        denom2 = denom**2
        dr_square = dr**2
        a = self.static_weight * d2r * denom
        b = -2 * self.static_weight * self.weight * dr_square * denom2
        c = -self.static_weight * self.weight * r_ * d2r * denom2
        d = 2 * self.static_weight * self.weight**2 * r_ * dr_square * denom**3
        e = self._get_der_jastrow_elements(r, dr)
        return a + b + c + d + e**2

    def _jastrow_derivative(self, r, dr, jast):
        """Gradient of the Jastrow factor, (nbatch, 3, nelec)."""
        nbatch = r.shape[0]
        prod_val = jast.prod(1).unsqueeze(-1).unsqueeze(-1)
        djast = self._get_der_jastrow_elements(r, dr) * prod_val
        out = torch.zeros(nbatch, NDIM, self.nelec)
        # might cause problems with backward cause in place operation
        out.index_add_(2, self.index_row, djast)
        out.index_add_(2, self.index_col, -djast)
        return out

    def _jastrow_second_derivative(self, r, dr, d2r, jast):
        """Laplacian of the Jastrow factor per electron, (nbatch, nelec)."""
        nbatch = r.shape[0]
        prod_val = jast.prod(1).unsqueeze(-1)
        d2jast = self._get_second_der_jastrow_elements(r, dr, d2r).sum(1)
        hess_jast = torch.zeros(nbatch, self.nelec)
        hess_jast.index_add_(1, self.index_row, d2jast)
        hess_jast.index_add_(1, self.index_col, d2jast)
        djast = self._get_der_jastrow_elements(r, dr)
        hess_jast = hess_jast + 2 * self._partial_derivative(djast)
        return hess_jast * prod_val

    def _partial_derivative(self, djast):
        """Mixed terms dB_ij/dx_i * dB_kl/dx_k of the Laplacian."""
        nbatch = djast.shape[0]
        out_mat = torch.zeros(nbatch, self.nelec)
        x = djast[..., self.index_partial_der]
        x = x.prod(-1)
        x *= self.weight_partial_der
        x = x.sum(1)
        out_mat.index_add_(1, self.index_partial_der_to_elec, x)
        return out_mat


class Orbitals(nn.Module):
    """Hydrogen-like orbital part exp(-alpha |r_i|) per electron."""

    def __init__(self, alpha=1.5):
        super().__init__()
        self.alpha = nn.Parameter(torch.tensor([alpha]))

    def forward(self, pos):
        rn = pos.view(pos.shape[0], NELEC, NDIM).norm(dim=-1)
        grad_log = -self.alpha * (pos.view(-1, NELEC, NDIM) / rn.unsqueeze(-1)).transpose(1, 2)  # (nbatch, 3, nelec)
        lap_log = self.alpha**2 - 2 * self.alpha / rn  # (nbatch, nelec): lap(phi)/phi
        return grad_log, lap_log


class SlaterJastrow(nn.Module):
    def __init__(self):
        super().__init__()
        self.orbitals = Orbitals()
        self.jastrow = TwoBodyJastrowFactor(nup=2, ndown=1)

    def local_energy(self, pos):
        grad_phi, lap_phi = self.orbitals(pos)
        jast = self.jastrow(pos)
        grad_jast = self.jastrow(pos, derivative=1) / jast.unsqueeze(-1)
        lap_jast = self.jastrow(pos, derivative=2) / jast
        lap_psi = lap_phi + lap_jast + 2 * (grad_phi * grad_jast).sum(1)
        kinetic = -0.5 * lap_psi.sum(-1)
        xyz = pos.view(pos.shape[0], NELEC, NDIM)
        v_en = -Z_NUC * (1.0 / xyz.norm(dim=-1)).sum(-1)
        r, _, _ = edist(pos)
        v_ee = (1.0 / r).sum(-1)
        return kinetic + v_en + v_ee


def main():
    torch.manual_seed(0)
    walkers = torch.randn(NWALKERS, NELEC * NDIM)
    wf = SlaterJastrow()
    opt = torch.optim.Adam(wf.parameters(), lr=1e-2)

    for epoch in range(5):
        opt.zero_grad()
        eloc = wf.local_energy(walkers)
        loss = eloc.mean()
        loss.backward()
        opt.step()
        print(f"epoch {epoch}: energy {loss.item():.4f}")


if __name__ == "__main__":
    main()
