"""GL0010 ``inference_saved``: a tensor made under ``torch.inference_mode()`` reached a forward that saves it.

NOTE [Inference tensors]
An inference tensor has no version counter, so autograd cannot save it for a
backward; torch refuses at the forward op that would save it. The tensor was made
elsewhere (a data cache, an evaluation helper decorated with
``@torch.inference_mode()``, a model built under it). The located note names the
tensors of the failing frame that are inference tensors, the lines where inference
mode was entered (recorded under a tracker, else read from the file), and the line
that saved them. Two fixes keep what the code computes and trains (the tensor is a
constant of the graph either way): ``torch.no_grad()`` where ``inference_mode()``
was entered, or a ``.clone()`` (a normal tensor) where the failing line reads it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

import torch

from ..claims import failure_claims
from ..context import Context
from ..edits import Edit
from ..evidence import Failure
from ..explanation import Explanation, Span
from ..fixes import Fix, Proposal, indent_of, source_of, unwrapped
from ..i18n import T, Text, join
from ..judge import judged
from ..location import Location
from ..rewrite import replace_reads
from ..source import parse, statement_at
from .family import BUILDERS

__all__ = ["under_inference", "locate"]

_ENTERED = re.compile(r"\binference_mode\(\s*\)")


def _inference_names(f: Failure) -> list[str]:
    """The frame's names of inference tensors, and of models whose parameters or buffers are."""
    found = []
    for key, value in f.namespace.items():
        if not isinstance(key, str) or key.startswith("_"):
            continue
        if (isinstance(value, torch.Tensor) and value.is_inference()) or (
            isinstance(value, torch.nn.Module)
            and any(t.is_inference() for t in (*value.parameters(), *value.buffers()))
        ):
            found.append(key)
    return sorted(found)


def _entered(f: Failure) -> list[Location]:
    """Where inference mode was entered: the tracker's record, else the lines of the file that enter it."""
    seen = [
        c.location
        for c in (f.recorder.cuts.cuts if f.recorder is not None else ())
        if c.label == "torch.inference_mode()"
    ]
    if seen:
        unique: list[Location] = []
        for at in reversed(seen):  # the latest first; a decorated function's call: its decorator
            at = _decorator_of(at) or _bound_before(at) or at
            if at not in unique:
                unique.append(at)
        return unique[:3]
    site = f.site
    tree = parse(site.source) if site is not None else None
    if site is None or tree is None:
        return []
    lines = sorted(
        {
            n.lineno
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("inference_mode") and not n.args
        }
    )
    return [Location(site.filename, line) for line in lines][:3]


def _bound_before(loc: Location) -> Location | None:
    """For ``with ctx:`` entering inference mode through a name, the line that binds the name to it
    (``ctx = torch.inference_mode() if self.inference_mode else torch.no_grad()``): the latest such statement
    above it; None for any other line."""
    m = re.fullmatch(r"\s*with\s+([A-Za-z_]\w*)\s*(?:as\s+\w+\s*)?:\s*(#.*)?", loc.code)
    if m is None:
        return None
    tree = parse(source_of(loc.filename))
    if tree is None:
        return None
    found = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        and n.lineno < loc.lineno
        and n.lineno == n.end_lineno
        and any(isinstance(t, ast.Name) and t.id == m[1] for t in n.targets)
        and _ENTERED.search(ast.unparse(n.value))
    ]
    return Location(loc.filename, max(found)) if found else None


def _decorator_of(loc: Location) -> Location | None:
    """For a line that calls a function decorated with ``@torch.inference_mode()`` (the decorator enters it
    there), the decorator's line; None when the line enters inference mode itself or calls no such function."""
    if "inference_mode" in loc.code:
        return None
    tree = parse(source_of(loc.filename))
    line = parse(loc.code)
    if tree is None or line is None:
        return None
    called = {ast.unparse(n.func).rsplit(".", 1)[-1] for n in ast.walk(line) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in called:
            for dec in node.decorator_list:
                if ast.unparse(dec).endswith("inference_mode()"):
                    return Location(loc.filename, dec.lineno)
    return None


def _no_grad_instead(f: Failure, entered: list[Location], trains: Text | None = None) -> Proposal | None:
    edits = []
    for at in entered:
        if len(_ENTERED.findall(at.code)) == 1:
            edits.append(Edit(at.filename, at.lineno, at.lineno, _ENTERED.sub("no_grad()", _line_text(at))))
    if not edits:
        return None
    return Proposal(
        Fix(
            summary=T(
                "use torch.no_grad() where inference mode is entered ({where})",
                where=", ".join(a.where for a in entered),
            ),
            trains=trains
            or T(
                "the same as intended: the tensors it computes are the same constants of the graph, and "
                "no_grad tensors can be saved for backward"
            ),
            edits=tuple(edits),
        ),
        None,
        True,
    )


def under_inference(e: Explanation, f: Failure) -> Explanation | None:
    """A graph cut by inference mode where the code turns grad back on (``torch.enable_grad()`` inside an
    ``inference_mode()`` block: a validation step that differentiates, a PINN's residual): the failing frame's
    tensors are inference tensors, which ``enable_grad()`` cannot give a graph. Located where inference mode is
    entered, with ``torch.no_grad()`` there first (NOTE [Inference mode under enable_grad]); None otherwise."""
    names = [n for n in _inference_names(f) if isinstance(f.namespace.get(n), torch.Tensor)]
    entered = _entered(f) if names else []
    why = T(
        "what the code means: torch.enable_grad() inside torch.no_grad() records the graph the code differentiates; "
        "the rest of the block still computes without one"
    )
    fix = _no_grad_instead(f, entered, why) if entered else None
    if fix is None:
        return None
    spans = [
        Span(at, T("made: inference mode is entered here; torch.enable_grad() inside it gives no graph"))
        for at in entered
    ]
    kept = failure_claims(f)
    fixes = tuple(replace(x, claims=kept) for x in judged([fix], Context(site=f.site)))
    return replace(e, spans=tuple(spans), fixes=(*fixes, *e.fixes))


# NOTE [Inference mode under enable_grad]
# torch.enable_grad() turns grad mode back on inside torch.no_grad(), but not inside torch.inference_mode():
# the tensors made there are inference tensors, and an operation on them records no graph whatever the grad
# mode (a Lightning-style validation loop entering inference mode, whose step differentiates a network's
# output by its inputs with enable_grad(): "element 0 of tensors does not require grad"). The fix is the
# trainer's own switch: torch.no_grad() where inference mode is entered, which enable_grad() does undo.


def locate(f: Failure) -> Explanation:
    e = BUILDERS["inference_saved"](f.message)
    site, loc = f.site, f.location
    names = _inference_names(f)
    entered = _entered(f)
    spans = [
        Span(at, T("made: inference mode is entered here; what it computes cannot be saved for backward"))
        for at in entered
    ]
    if loc is not None:
        what = join(names, ", ") if names else T("an inference tensor")
        spans.append(Span(loc, T("saved: this forward saves {names} for its backward", names=what)))
    located = replace(e, spans=tuple(spans))
    if site is None:
        return located
    proposals: list[Proposal] = []
    trained = _trained_blocks(f, entered)
    if trained:
        taken_out = [unwrapped(site, block) for block in trained]
        proposals.append(
            Proposal(
                Fix(
                    summary=T(
                        "take the forward out of the inference_mode() block ({where}): it computes from tensors that "
                        "require grad, so its result is meant to have a graph",
                        where=", ".join(Location(site.filename, b.lineno).where for b in trained),
                    ),
                    trains=T("what the code means to train: the forward's result keeps its graph to the parameters"),
                    edits=tuple(e for e in taken_out if e is not None) if all(taken_out) else (),
                ),
                None,
                True,
            )
        )
    instead = _no_grad_instead(f, entered)
    if instead is not None:
        proposals.append(instead)
    tree = site.tree()
    st = (
        statement_at(tree, loc.lineno)
        if tree is not None and loc is not None and loc.filename == site.filename
        else None
    )
    plain = [n for n in names if isinstance(f.namespace.get(n), torch.Tensor)]
    if st is not None and loc is not None and st.lineno == st.end_lineno and plain:
        text = site.text(loc.lineno).strip()
        new = text
        for name in plain:
            new = replace_reads(new, name, f"{name}.clone()") or new
        if new != text:
            proposals.append(
                Proposal(
                    Fix(
                        alternative=True,
                        summary=T("read a copy of {names} where the forward saves it", names=join(plain, ", ")),
                        trains=T("the same as intended: the copy is a normal tensor, a constant of the graph"),
                        edits=(Edit(site.filename, loc.lineno, loc.lineno, indent_of(site, loc.lineno) + new),),
                    ),
                    None,
                    True,
                )
            )
    kept = failure_claims(f)
    fixes = tuple(replace(fix, claims=kept) for fix in judged(proposals, Context(site=site)))
    return replace(located, fixes=(*fixes, *e.fixes))


def _trained(value: object, held: frozenset[int]) -> bool:
    """A tensor that requires grad, a model whose parameters an optimizer holds (``held``: their ids; with no
    optimizer in the frame, any model with trainable parameters), or a list or dict holding one: what a forward
    meant to train reads (a frozen encoder's cache is not one)."""
    if isinstance(value, torch.Tensor):
        return value.requires_grad
    if isinstance(value, torch.nn.Module):
        return any(p.requires_grad and (not held or id(p) in held) for p in value.parameters())
    if isinstance(value, (list, tuple)):
        return any(_trained(v, held) for v in value[:16])
    if isinstance(value, dict):
        return any(_trained(v, held) for v in list(value.values())[:16])
    return False


def _trained_blocks(f: Failure, entered: list[Location]) -> list[ast.With]:
    """The ``with torch.inference_mode():`` blocks of the failing function whose statements read a tensor that
    requires grad or a model with trainable parameters: a forward meant to train, not data."""
    site = f.site
    tree = site.tree() if site is not None else None
    if site is None or tree is None:
        return []
    found = []
    for at in entered:
        if at.filename != site.filename or not site.holds(at.lineno):
            continue
        block = next(
            (n for n in ast.walk(tree) if isinstance(n, ast.With) and n.lineno == at.lineno),
            None,
        )
        if block is None:
            continue
        read = {n.id for st in block.body for n in ast.walk(st) if isinstance(n, ast.Name)}
        held = frozenset().union(*site.optimizers.values()) if site.optimizers else frozenset()
        if any(_trained(f.namespace.get(name), held) for name in read):
            found.append(block)
    return found


def _line_text(at: Location) -> str:
    import linecache

    return linecache.getline(at.filename, at.lineno).rstrip("\n")
