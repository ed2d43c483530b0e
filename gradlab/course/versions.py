"""Exercise checks on the version counter, each judging a function the learner writes.

:func:`check_writes_counter` (notebook 02) judges a measurement of how much one
optimizer step moves a weight's ``_version``; :func:`check_saved_hooks` (notebook
03) judges saved-tensor hooks that keep autograd's version check. Each runs the
learner's code on its own fresh tensors; any wrong answer, including one that
raises, gets a ✗ :class:`~gradlab.course.exercise.Verdict` and a reason.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from gradlab.i18n import _, _t

from .exercise import Verdict, _is_template, _not_a_function, _not_yet, _right, pending
from .words import say_t

__all__ = ["check_writes_counter", "check_saved_hooks"]


def _first_sentence(error: BaseException) -> str:
    text = str(error).strip().split("\n")[0]
    return f"{type(error).__name__}: {text.split('. ')[0]}"


def check_writes_counter(writes: object) -> Verdict:
    """Exercise (notebook 02): measure how much one optimizer step moves a weight's version counter.

    ``writes(make_optimizer)`` builds a fresh ``nn.Linear``, its optimizer
    ``make_optimizer(params)``, runs one backward and one step, and returns how
    much the weight's ``_version`` moved. The check calls it for SGD, Adam,
    AdamW and ``AdamW(weight_decay=0)`` and compares with its own measurement.

    Example::

        >>> def writes(make_optimizer):
        ...     layer = torch.nn.Linear(3, 1)
        ...     optimizer = make_optimizer(layer.parameters())
        ...     layer(torch.ones(2, 3)).sum().backward()
        ...     before = layer.weight._version
        ...     optimizer.step()
        ...     return layer.weight._version - before
        >>> check_writes_counter(writes).passed
        True
    """
    if _is_template(writes):
        return pending()
    if not callable(writes):
        return _not_a_function("writes", "make_optimizer")
    optimizers: dict[str, Callable[..., torch.optim.Optimizer]] = {
        "SGD": lambda p: torch.optim.SGD(p, lr=0.01),
        "Adam": lambda p: torch.optim.Adam(p, lr=0.01),
        "AdamW": lambda p: torch.optim.AdamW(p, lr=0.01),
        "AdamW(weight_decay=0)": lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0),
    }
    for label, make in optimizers.items():
        layer = torch.nn.Linear(3, 1)
        optimizer = make(layer.parameters())
        layer(torch.ones(2, 3)).sum().backward()
        before = layer.weight._version
        optimizer.step()
        expected = layer.weight._version - before
        stepped: list[bool] = []  # per step the learner's optimizer took: did any parameter have a gradient?

        def recording(
            params: object, make: Callable[..., torch.optim.Optimizer] = make, stepped: list[bool] = stepped
        ) -> torch.optim.Optimizer:
            made = make(params)

            def seen(opt: torch.optim.Optimizer, args: object, kwargs: object) -> None:
                stepped.append(any(p.grad is not None for g in opt.param_groups for p in g["params"]))

            made.register_step_pre_hook(seen)
            return made

        try:
            got = writes(recording)
        except Exception as e:  # the learner's code
            return _not_yet(_t("writes({label}) raised {error}.", label=label, error=_first_sentence(e)))
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if not isinstance(got, int) or isinstance(got, bool):
            return _not_yet(
                _t(
                    "writes({label}) returned {value!r}: return a whole number, the versions one step added.",
                    label=label,
                    value=got,
                )
            )
        if got == expected + 1:
            return _not_yet(
                _t(
                    "writes({label}) returned {got}: that is the weight's version, not how much the step moved it "
                    "(subtract the version before the step; a fresh weight starts at 1).",
                    label=label,
                    got=got,
                )
            )
        if got == 0 and not stepped:
            return _not_yet(
                say_t(
                    "writes({label}) returned 0, and the optimizer it made never stepped: call optimizer.step() "
                    "between the two readings of the version.",
                    label=label,
                )
            )
        if got == 0 and not any(stepped):
            return _not_yet(
                _t(
                    "writes({label}) returned 0: an optimizer skips a parameter without a gradient; run a backward "
                    "before the step, and read the version just before and just after it.",
                    label=label,
                )
            )
        if got == 0:
            return _not_yet(
                say_t(
                    "writes({label}) returned 0, though the step ran with a gradient and wrote the weight: the "
                    "reading missed it. Read layer.weight._version itself (layer.weight.data is a new tensor with "
                    "a counter of its own, at 0 every time).",
                    label=label,
                )
            )
        if got != expected:
            return _not_yet(
                _t(
                    "writes({label}) returned {got}, but one step of it moves the counter by {expected}: read the "
                    "version just before and just after one step.",
                    label=label,
                    got=got,
                    expected=expected,
                )
            )
    return _right(_("your measurement gives 1 for SGD, Adam and AdamW(weight_decay=0), and 2 for AdamW."))


class _PackFailed(Exception):
    """The learner's pack hook raised while the forward saved a tensor."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _pack_failed(case: str, error: BaseException) -> str:
    return say_t(
        "pack_hook raised {error} while the forward of {case} saved a tensor: it gets each saved tensor and returns "
        "what to keep, for unpack_hook to turn back into the tensor.",
        case=case,
        error=_first_sentence(error),
    )


def _grad_case(
    pack: Callable[[torch.Tensor], object], unpack: Callable[[object], torch.Tensor], case: str, write: bool
) -> torch.Tensor:
    """The gradient of one small case under the learner's hooks, with or without an in-place write after the save.

    An error in the forward, where only ``pack`` runs, comes out as :class:`_PackFailed`.
    """
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            if case == "w * w":
                saved, loss = x, (x * x).sum()
            else:
                saved = x.sigmoid()
                loss = saved.sum()
    except Exception as e:  # the learner's pack hook
        raise _PackFailed(e) from e
    if write:
        with torch.no_grad():
            saved.add_(1)
    torch.autograd.backward(loss)
    assert x.grad is not None
    return x.grad


def check_saved_hooks(pack_hook: object, unpack_hook: object) -> Verdict:
    """Exercise (notebook 03): saved-tensor hooks that let no stale tensor give a silently wrong gradient.

    The check runs two cases (``w * w`` saves its input, ``sigmoid`` its output)
    under ``torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)``.
    Without an in-place write the gradients must be autograd's own; with a write
    after the save the backward must raise, or give the gradient of the forward's
    values (hooks that save a copy). Identity hooks, or hooks that pass the
    modified tensor back, give the wrong gradient and are told so.

    Example::

        >>> def pack_hook(t):
        ...     return t, t._version
        >>> def unpack_hook(packed):
        ...     t, version = packed
        ...     if t._version != version:
        ...         raise RuntimeError("a saved tensor was modified in place")
        ...     return t
        >>> check_saved_hooks(pack_hook, unpack_hook).passed
        True
    """
    if _is_template(pack_hook) or _is_template(unpack_hook):
        return pending()
    for name, fn, example in (("pack_hook", pack_hook, "t"), ("unpack_hook", unpack_hook, "packed")):
        if not callable(fn):
            return _not_a_function(name, example)
    assert callable(pack_hook) and callable(unpack_hook)
    raised = []
    for case in ("w * w", "sigmoid"):
        x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
        right = torch.autograd.grad((x * x).sum() if case == "w * w" else x.sigmoid().sum(), x)[0]
        try:
            clean = _grad_case(pack_hook, unpack_hook, case, write=False)
        except _PackFailed as e:
            return _not_yet(_pack_failed(case, e.error))
        except Exception as e:  # the learner's hooks
            return _not_yet(
                _t(
                    "with no in-place write, the backward of {case} raised {error}: unpack_hook must give back the "
                    "tensor pack_hook saved.",
                    case=case,
                    error=_first_sentence(e),
                )
            )
        if not torch.allclose(clean, right):
            return _not_yet(
                _t(
                    "with no in-place write, {case} gave the gradient {got}, not autograd's {right}: unpack_hook must "
                    "give back the saved tensor's values.",
                    case=case,
                    got=clean.tolist(),
                    right=right.tolist(),
                )
            )
        try:
            stale = _grad_case(pack_hook, unpack_hook, case, write=True)
        except _PackFailed as e:  # a pack hook that failed only on its second forward
            return _not_yet(_pack_failed(case, e.error))
        except Exception:  # raising on a stale tensor is a right answer
            raised.append(case)
            continue
        if not torch.allclose(stale, right):
            return _not_yet(
                _t(
                    "after an in-place write to the saved tensor, {case}'s backward ran and gave {got}; the forward's "
                    "gradient is {right}. Compare the version pack_hook saw with the version at unpack, and raise.",
                    case=case,
                    got=[round(v, 4) for v in stale.tolist()],
                    right=[round(v, 4) for v in right.tolist()],
                )
            )
    if raised:
        return _right(_("your hooks raise when a saved tensor was written in place, as autograd's own check does."))
    return _right(_("your hooks keep a copy: the backward uses the forward's values even after an in-place write."))
