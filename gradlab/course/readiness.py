"""Check that the machine is ready for the course.

:func:`environment` collects versions (Python, torch, gradlab, ipywidgets)
and whether Graphviz's ``dot`` program is installed, into an
:class:`EnvironmentReport`. Collecting has no side effects; printing the
report is up to the caller.
"""

from __future__ import annotations

import html
import importlib.metadata
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass

from gradlab import __version__
from gradlab.i18n import _, _t

__all__ = ["EnvironmentReport", "environment", "setup", "GRAPHVIZ_INSTALL_LINES"]

#: How to install Graphviz's ``dot`` on the common platforms.
GRAPHVIZ_INSTALL_LINES: tuple[str, ...] = (
    "sudo apt-get install graphviz           # Debian / Ubuntu",
    "brew install graphviz                   # macOS",
    "conda install -c conda-forge graphviz   # conda",
)

#: Oldest torch and Python gradlab supports (pyproject.toml says the same).
MIN_TORCH: tuple[int, int] = (2, 4)
MIN_PYTHON: tuple[int, int] = (3, 11)


@dataclass(frozen=True)
class EnvironmentReport:
    """Versions and tools found on this machine.

    Attributes:
        python: Python version, e.g. ``"3.11.9"``.
        torch: torch version without a local build tag (``"2.13.0"``, not
            ``"2.13.0+cpu"``), or ``None`` if torch is not installed.
        gradlab: gradlab's version.
        dot_version: Graphviz ``dot`` version (``"2.43.0"``), or ``None`` if
            ``dot`` is not on ``PATH``.
        ipywidgets: ipywidgets version, or ``None`` if not installed.

    Example::

        >>> report = environment()
        >>> print(report.summary())          # doctest: +SKIP
        torch 2.13.0, gradlab 0.1.0: ready
    """

    python: str
    torch: str | None
    gradlab: str
    dot_version: str | None
    ipywidgets: str | None

    @property
    def graphviz_found(self) -> bool:
        """Whether Graphviz's ``dot`` program was found on ``PATH``."""
        return self.dot_version is not None

    @property
    def ready(self) -> bool:
        """Whether the course can run: Python and torch are recent enough.

        Graphviz and ipywidgets are optional: without them gradlab draws
        graphs as text and widgets do not show.
        """
        python_ok = _version_tuple(self.python) >= MIN_PYTHON
        return python_ok and self.torch is not None and _version_tuple(self.torch) >= MIN_TORCH

    def summary(self) -> str:
        """One line that does not depend on optional tools or paths.

        Example::

            >>> environment().summary()          # doctest: +SKIP
            'torch 2.13.0, gradlab 0.1.0: ready'
        """
        if self.torch is None:
            return _t("torch not installed, gradlab {gradlab}: not ready (run `make setup`)", gradlab=self.gradlab)
        if self.ready:
            return _t("torch {torch}, gradlab {gradlab}: ready", torch=self.torch, gradlab=self.gradlab)
        return _t(
            "torch {torch}, gradlab {gradlab}: not ready (Python >= {python} and torch >= {min_torch} needed; "
            "run `make setup`)",
            torch=self.torch,
            gradlab=self.gradlab,
            python=f"{MIN_PYTHON[0]}.{MIN_PYTHON[1]}",
            min_torch=f"{MIN_TORCH[0]}.{MIN_TORCH[1]}",
        )

    def _rows(self) -> list[tuple[str, str]]:
        missing = _("not installed")
        return [
            ("Python", self.python),
            ("torch", self.torch or missing),
            ("gradlab", self.gradlab),
            ("Graphviz dot", self.dot_version or _("not found (graphs are drawn as text)")),
            ("ipywidgets", self.ipywidgets or missing),
        ]

    def __str__(self) -> str:
        width = max(len(name) for name, _ in self._rows())
        lines = [f"{name:<{width}}  {value}" for name, value in self._rows()]
        lines.append(self.summary())
        if not self.graphviz_found:
            lines.append(_("To draw graphs as pictures, install Graphviz, then restart the kernel:"))
            lines.extend(f"    {line}" for line in GRAPHVIZ_INSTALL_LINES)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(name)}</th>"
            f"<td style='text-align:left'>{html.escape(value)}</td></tr>"
            for name, value in self._rows()
        )
        parts = [f"<table>{rows}</table>", f"<p>{html.escape(self.summary())}</p>"]
        if not self.graphviz_found:
            install = html.escape("\n".join(GRAPHVIZ_INSTALL_LINES))
            advice = html.escape(_("To draw graphs as pictures, install Graphviz, then restart the kernel:"))
            parts.append(f"<p>{advice}</p><pre>{install}</pre>")
        return "".join(parts)


def environment() -> EnvironmentReport:
    """Collect the versions and tools the course uses.

    Reads installed package metadata (nothing is imported) and runs
    ``dot -V`` if ``dot`` is on ``PATH``.

    Example::

        >>> import gradlab.course
        >>> report = gradlab.course.environment()
        >>> report.ready                     # doctest: +SKIP
        True
        >>> print(report)                    # doctest: +SKIP
    """
    torch_version = _package_version("torch")
    return EnvironmentReport(
        python=platform.python_version(),
        torch=torch_version.split("+")[0] if torch_version else None,
        gradlab=__version__,
        dot_version=_dot_version(),
        ipywidgets=_package_version("ipywidgets"),
    )


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _dot_version() -> str | None:
    """Version of Graphviz ``dot`` on ``PATH``; ``None`` if absent or broken."""
    dot = shutil.which("dot")
    if dot is None:
        return None
    try:
        # `dot -V` writes e.g. "dot - graphviz version 2.43.0 (0)" to stderr.
        done = subprocess.run([dot, "-V"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    match = re.search(r"version\s+(\S+)", done.stderr + done.stdout)
    return match.group(1) if match else "unknown version"


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:2])


def setup(seed: int = 0, threads: int = 1, language: str | None = None) -> None:
    """Make a notebook reproducible: seed torch and fix the number of CPU threads.

    The course's networks are tiny: one thread is fastest for them, and a fixed
    thread count keeps floating-point results identical from run to run. Call it
    once at the top of a notebook; importing gradlab never does this for you.
    In a notebook it also stores matplotlib figures at twice the pixels, shown at
    the same size (IPython's ``retina`` PNG): the printed handout prints the stored
    pictures, and at the screen's 100 dpi they print soft.
    ``language`` sets the language of gradlab's own words (``"en"``, ``"zh_CN"``;
    see :func:`gradlab.set_language`): each edition of the course passes its own.

    Example::

        >>> import torch
        >>> setup(seed=0)
        >>> torch.get_num_threads()
        1
    """
    import torch

    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, not {type(seed).__name__}; pass e.g. setup(seed=0)")
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}; pass e.g. setup(threads=1)")
    if language is not None:
        from gradlab.i18n import set_language

        set_language(language)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    _figures_for_print()


def _figures_for_print() -> None:
    """In a notebook's kernel, matplotlib figures as retina PNG (twice the pixels, same display size)."""
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return  # a terminal IPython or a script shows no stored PNG
    set_matplotlib_formats("retina")  # type: ignore[no-untyped-call]
