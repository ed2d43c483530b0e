"""Which parameters got a gradient, which got zeros, and which a loss never reaches."""

from __future__ import annotations

import html
from dataclasses import dataclass

import torch

from .graph import roots_of, walk
from .i18n import _, _t, ljust, width
from .names import Namer, NamesLike

__all__ = ["GradReport", "GradRow", "grad_report"]


@dataclass(frozen=True)
class GradRow:
    """One parameter: ``status`` is ``none`` (``.grad`` is None), ``zero`` (all zeros) or ``ok``."""

    name: str
    shape: tuple[int, ...]
    status: str
    norm: float | None
    reached: bool | None


@dataclass(frozen=True)
class GradReport:
    """Per-parameter gradient status; ``reached`` is filled when a loss was given."""

    rows: tuple[GradRow, ...]

    @property
    def no_grad(self) -> list[str]:
        """Parameters whose ``.grad`` is None: no backward reached them."""
        return [r.name for r in self.rows if r.status == "none"]

    @property
    def zero(self) -> list[str]:
        """Parameters whose gradient is exactly zero everywhere."""
        return [r.name for r in self.rows if r.status == "zero"]

    @property
    def unreached(self) -> list[str]:
        """Parameters the given loss cannot reach (cut off by a detach, or unused)."""
        return [r.name for r in self.rows if r.reached is False]

    @property
    def learning(self) -> list[str]:
        return [r.name for r in self.rows if r.status == "ok"]

    def __str__(self) -> str:
        parameter, shape, gradient, reached = _("parameter"), _("shape"), _("gradient"), _("reached by loss")
        name_width = max([width(r.name) for r in self.rows] + [width(parameter)])
        shape_width, grad_width = max(10, width(shape)), max(14, width(gradient))
        with_reach = any(r.reached is not None for r in self.rows)
        head = ljust(parameter, name_width) + "  " + ljust(shape, shape_width) + "  " + ljust(gradient, grad_width)
        lines = [(head + "  " + (reached if with_reach else "")).rstrip()]
        for r in self.rows:
            line = ljust(r.name, name_width) + "  " + ljust(str(list(r.shape)), shape_width)
            line += "  " + ljust(_gradient(r), grad_width)
            if with_reach:
                line += "  " + (_("yes") if r.reached else _("NO"))
            lines.append(line.rstrip())
        verdicts = []
        if self.unreached:
            verdicts.append(_t("not reached by the loss: {names}", names=", ".join(self.unreached)))
        if self.no_grad:
            verdicts.append(_t("no gradient: {names}", names=", ".join(self.no_grad)))
        if self.zero:
            verdicts.append(_t("all-zero gradient: {names}", names=", ".join(self.zero)))
        lines.append("=> " + (_("; ").join(verdicts) if verdicts else _("every parameter has a non-zero gradient")))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = []
        for r in self.rows:
            grad = f"{r.norm:.3g}" if r.status == "ok" else html.escape(_gradient(r))
            color = "" if r.status == "ok" and r.reached is not False else ' style="color:#c62828"'
            reach = "" if r.reached is None else html.escape(_("yes") if r.reached else _("no"))
            rows.append(
                f"<tr{color}><td>{html.escape(r.name)}</td><td>{list(r.shape)}</td><td>{grad}</td><td>{reach}</td></tr>"
            )
        text = html.escape(str(self).splitlines()[-1])
        headers = "".join(
            f"<th>{html.escape(h)}</th>" for h in (_("parameter"), _("shape"), _("gradient"), _("reached by loss"))
        )
        return f"<table><tr>{headers}</tr>" + "".join(rows) + f"</table><p>{text}</p>"


def _gradient(r: GradRow) -> str:
    """A row's gradient cell: ``None``, ``all zero`` or ``norm 0.123``."""
    if r.status == "none":
        return "None"
    if r.status == "zero":
        return _("all zero")
    return _t("norm {norm}", norm=f"{r.norm:.3g}")


def grad_report(names: NamesLike, loss: torch.Tensor | None = None) -> GradReport:
    """Report each named parameter's ``.grad``: None, all zero, or its norm.

    With ``loss``, also say which parameters that loss reaches at all (a
    ``.detach()`` inside a network cuts the layers before it off). Reads only;
    changes nothing.

    Example::

        >>> lin = torch.nn.Linear(2, 1)
        >>> lin(torch.ones(1, 2)).sum().backward()
        >>> grad_report({"lin": lin}).no_grad
        []
    """
    if names is None:
        raise TypeError("grad_report() needs names: pass a mapping of name to nn.Module or tensor, e.g. {'n_1': n_1}")
    namer = Namer(names)
    params = [(n, t) for n, t in namer.named() if t.requires_grad]
    if not params:
        raise ValueError(
            "grad_report() found no tensors that require grad in names; pass modules with parameters, "
            "e.g. {'n_1': n_1, 'n_2': n_2}"
        )
    reached_ids: set[int] | None = None
    if loss is not None:
        roots = roots_of(loss, "loss")
        reached_ids = {id(fn.variable) for fn in walk(roots) if hasattr(fn, "variable")}
    rows = []
    for name, p in params:
        g = p.grad
        if g is None:
            status, norm = "none", None
        else:
            norm = float(torch.linalg.vector_norm(g.detach())) if g.numel() else 0.0
            status = "zero" if not bool(g.detach().ne(0).any()) else "ok"
        reached = None if reached_ids is None else id(p) in reached_ids
        rows.append(GradRow(name, tuple(p.shape), status, norm, reached))
    return GradReport(tuple(rows))
