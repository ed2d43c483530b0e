"""GL0003's situations where a call on the loss's path returns values without a graph, each with its fix: a model
the code put in eval mode whose forward's eval branch cuts (NOTE [A model whose eval branch cuts]), a draw with
``.sample()`` where the distribution has a reparameterised ``.rsample()`` (NOTE [A sample drawn without its
reparameterisation]), and a gradient taken by ``torch.autograd.grad`` without ``create_graph=True`` (NOTE [A
gradient taken without its graph])."""

from __future__ import annotations

import ast
import textwrap
from dataclasses import replace
from typing import Any

import torch

from ..claims import failure_claims
from ..context import Context
from ..edits import Edit
from ..evidence import Failure
from ..fixes import Fix, Proposal, indent_of, replace_line
from ..i18n import T
from ..judge import judged
from ..location import Location
from ..loop import Site, site_intent
from ..rewrite import call_with_keyword
from ..source import function_of, names, parse, statement_at
from .cut_path import PathCut, backward_target

__all__ = ["eval_mode_fix", "gradient_without_graph_fix", "sampled_fix"]


def eval_mode_fix(f: Failure, tree: ast.Module | None, cut: PathCut, line: int | None) -> tuple[Location, Fix] | None:
    """A model on the loss's path, put in eval mode by the code, returned values without a graph from an input
    with one, and its forward branches on ``self.training``: the fix keeps it in training mode (NOTE [A model whose
    eval branch cuts])."""
    site = f.site
    if site is None or tree is None or line is None:
        return None
    graph = {k for k, v in f.namespace.items() if isinstance(v, torch.Tensor) and v.requires_grad}
    for st in cut.statements:
        if not isinstance(st, ast.Assign):
            continue
        targets = names(st, ast.Store)
        if not targets or any(isinstance(v := f.namespace.get(t), torch.Tensor) and v.requires_grad for t in targets):
            continue
        for call in (n for n in ast.walk(st.value) if isinstance(n, ast.Call)):
            model = f.namespace.get(ast.unparse(call.func))
            if not isinstance(model, torch.nn.Module) or model.training:
                continue
            if not any(names(a, ast.Load) & graph or _trains_in(a, f.namespace) for a in call.args):
                continue  # no argument with a graph: a tensor that requires grad, or a trainable model's output
            found = _eval_call(tree, ast.unparse(call.func), line)
            flag = _training_flag(type(model), model)
            # its own layers that act otherwise in training mode: the switch alone turns them back on too
            layers = sorted(
                {
                    type(m).__name__
                    for m in model.modules()
                    if m is not model
                    and isinstance(m, (torch.nn.modules.dropout._DropoutNd, torch.nn.modules.batchnorm._NormBase))
                }
            )
            if found is None or flag is False:
                continue
            name = ast.unparse(call.func)
            new = f"{name}.{flag} = False" if flag else f"{name}.train()"
            edit = replace_line(Context(site=site, backward_line=line), found, new)
            if edit is None:
                edit = Edit(site.filename, found, found, indent_of(site, found) + new)
            loss, trained = _loss_and_trained(site, tree, line)
            fix = Fix(
                summary=T(
                    "keep {model} in training mode, whose forward carries the gradient, and turn off what "
                    "self.{flag} guards instead: {new} in place of {model}.eval()",
                    model=name,
                    flag=flag,
                    new=new,
                )
                if flag
                else T(
                    "keep {model} in training mode ({new} in place of {model}.eval()): its forward's eval branch "
                    "returns values without a graph",
                    model=name,
                    new=new,
                ),
                trains=T(
                    "{loss} trains {models} through {model}'s training-mode forward; the updates under "
                    "self.{flag} no longer run",
                    loss=loss or T("the loss"),
                    models=", ".join(trained) or T("what its optimizers hold"),
                    model=name,
                    flag=flag,
                )
                if flag and not layers
                else T(
                    "{loss} trains {models} through {model}'s training-mode forward; the updates under "
                    "self.{flag} no longer run, but its {layers} layers act in training mode again (dropout on, "
                    "running statistics updated)",
                    loss=loss or T("the loss"),
                    models=", ".join(trained) or T("what its optimizers hold"),
                    model=name,
                    flag=flag,
                    layers=", ".join(layers),
                )
                if flag
                else T(
                    "{loss} trains {models} through {model}'s training-mode forward; whatever that forward does in "
                    "training mode besides (dropout, running statistics, codebook updates) runs again",
                    loss=loss or T("the loss"),
                    models=", ".join(trained) or T("what its optimizers hold"),
                    model=name,
                ),
                edits=(edit,),
                claims=((loss, trained),) if loss and trained else (),
                applicability="machine-applicable" if flag and not layers else "maybe-incorrect",
            )
            fixes = judged([Proposal(fix, None, True)], Context(site=site))  # its code: the edits, checked
            if not fixes:
                return None
            # .train() runs what training mode runs besides: not applied without the user's word
            sure = fix.applicability if fixes[0].code is not None else "sentence"
            return Location(site.filename, found), replace(fixes[0], claims=fix.claims, applicability=sure)
    return None


def _loss_and_trained(site: Site, tree: ast.Module, line: int) -> tuple[str | None, tuple[str, ...]]:
    """The loss the backward at ``line`` is called on (its source), and the models the loop's optimizers step on it."""
    here = statement_at(tree, line)
    target = backward_target(here) if here is not None else None
    return (ast.unparse(target) if target is not None else None), site_intent(site, line).trained


def sampled_fix(f: Failure, tree: ast.Module | None, cut: PathCut, line: int | None) -> tuple[Location, Fix] | None:
    """A function the loss's path calls draws from a distribution with ``.sample()`` where the distribution has a
    reparameterised ``.rsample()``: the draw has no graph, so the loss built from it has none (NOTE [A sample drawn
    without its reparameterisation])."""
    site = f.site
    if site is None or tree is None or line is None:
        return None
    funcs = [ast.unparse(n.func) for st in cut.statements for n in ast.walk(st) if isinstance(n, ast.Call)]
    called = {func.rsplit(".", 1)[-1] for func in funcs}
    if any(isinstance(f.namespace.get(func), torch.nn.Module) for func in funcs):
        called.add("forward")  # a model the path calls: its forward runs
    spots: list[int] = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name not in called:
            continue
        if any(isinstance(n, ast.Attribute) and n.attr == "log_prob" for n in ast.walk(fn)):
            continue  # a score-function estimator (REINFORCE): the draw is meant to be a constant
        for n in ast.walk(fn):
            if not (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "sample"
                and isinstance(n.func.value, ast.Call)
            ):
                continue
            made = f.namespace.get(ast.unparse(n.func.value.func).rsplit(".", 1)[-1])
            if isinstance(made, type) and issubclass(made, torch.distributions.Distribution) and made.has_rsample:
                spots.append(n.lineno)
    spots = sorted(set(spots))
    if len(spots) != 1 or site.text(spots[0]).count(".sample(") != 1:
        return None
    at = spots[0]
    text = site.text(at)
    edit = Edit(site.filename, at, at, text.replace(".sample(", ".rsample(", 1))
    loss, trained = _loss_and_trained(site, tree, line)
    fix = Fix(
        summary=T(
            "draw with .rsample() instead of .sample() at {where}: the reparameterised draw is a function of the "
            "distribution's parameters, so {loss} has a graph through it",
            where=Location(site.filename, at).where,
            loss=loss or T("the loss"),
        ),
        trains=T(
            "{loss} trains {models} through the draws, as the optimizer step after it asks; the draws follow the "
            "same distribution",
            loss=loss or T("the loss"),
            models=", ".join(trained) or T("what its optimizers hold"),
        ),
        edits=(edit,),
        claims=((loss, trained),) if loss and trained else (),
    )
    fixes = judged([Proposal(fix, None, True)], Context(site=site))
    if not fixes or fixes[0].code is None:
        return None
    return Location(site.filename, at), replace(fixes[0], claims=fix.claims)


# NOTE [A gradient taken without its graph]
# torch.autograd.grad returns gradients with no graph of their own unless
# create_graph=True: a penalty built on them (StyleGAN's path length, a gradient
# penalty, an input-gradient regulariser, a PINN residual) is a tensor without
# grad_fn, and its backward raises "does not require grad". Found when the loss's
# path, or a function of the file it calls, takes torch.autograd.grad(...) without
# create_graph=True, and that is the only such call: the fix passes create_graph=True
# there (what torch documents for higher-order gradients). The penalty's values are the
# same; its backward then trains what the gradient depends on.
def gradient_without_graph_fix(
    f: Failure, tree: ast.Module | None, cut: PathCut, line: int | None
) -> tuple[Location, Fix] | None:
    """The loss's path takes ``torch.autograd.grad`` without ``create_graph=True`` (NOTE [A gradient taken without
    its graph])."""
    site = f.site
    if site is None or tree is None or line is None:
        return None
    called = {
        ast.unparse(n.func).rsplit(".", 1)[-1] for st in cut.statements for n in ast.walk(st) if isinstance(n, ast.Call)
    }
    scopes: list[ast.AST] = list(cut.statements)
    scopes += [
        fn for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name in called
    ]
    calls = {
        id(n): n
        for scope in scopes
        for n in ast.walk(scope)
        if isinstance(n, ast.Call)
        and ast.unparse(n.func).endswith("autograd.grad")
        and not any(
            k.arg == "create_graph" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
            for k in n.keywords
        )
    }
    # the failing statement itself is the backward (an autograd.grad under no_grad raises there): not a gradient the
    # loss is built on
    calls = {k: n for k, n in calls.items() if n.lineno != line}
    if len(calls) != 1:
        return None
    call = next(iter(calls.values()))
    at = call.lineno
    new = call_with_keyword(site.text(at), call, "create_graph", "True")  # or create_graph=False made True
    if new is None:
        return None
    loss, trained = _loss_and_trained(site, tree, line)
    fix = Fix(
        summary=T(
            "pass create_graph=True to torch.autograd.grad at {where}: without it the gradient has no graph, so "
            "{loss}, built on it, has none",
            where=Location(site.filename, at).where,
            loss=loss or T("the loss"),
        ),
        trains=T(
            "{loss} trains {models} through the gradient, with the same values",
            loss=loss or T("the loss"),
            models=", ".join(trained) or T("what its optimizers hold"),
        ),
        edits=(Edit(site.filename, at, at, new),),
        # the loop's other losses train what they trained: the fix changes only the penalty's graph
        claims=tuple({**dict(failure_claims(f)), **({loss: trained} if loss and trained else {})}.items()),
    )
    fixes = judged([Proposal(fix, None, True)], Context(site=site))
    if not fixes or fixes[0].code is None:
        return None
    return Location(site.filename, at), replace(fixes[0], claims=fix.claims)


# NOTE [A sample drawn without its reparameterisation]
# A loss computed from draws of a distribution (a forecaster's sample paths scored
# by the CRPS, a VAE's latent drawn by hand, a policy's continuous action) has no
# graph when the draws come from .sample(), which runs under no_grad; .rsample()
# draws the same values from the same generator (loc + scale * eps) as a function
# of the parameters. Found in a function the loss's path calls (a model's forward,
# a forecast method): one line that calls .sample() on a distribution made in place
# whose class has a reparameterised sample (has_rsample).


def _trains_in(node: ast.expr, namespace: dict[str, Any]) -> bool:
    """``node`` calls a model of ``namespace`` with a parameter that requires grad (``encoder(x)``)."""
    for n in ast.walk(node):
        model = namespace.get(ast.unparse(n.func)) if isinstance(n, ast.Call) else None
        if isinstance(model, torch.nn.Module) and any(p.requires_grad for p in model.parameters()):
            return True
    return False


def _eval_call(tree: ast.Module, name: str, line: int) -> int | None:
    """The line of the last one-line ``name.eval()`` (or ``name.train(False)``) statement above ``line`` in its
    function, or at the module's top level (not one inside another function: an evaluation helper's)."""
    scope = function_of(tree, line)
    found = [
        st.lineno
        for st in ast.walk(tree)
        if isinstance(st, ast.Expr)
        and isinstance(st.value, ast.Call)
        and isinstance(st.value.func, ast.Attribute)
        and ast.unparse(st.value.func.value) == name
        and (
            st.value.func.attr == "eval"
            or (st.value.func.attr == "train" and [ast.unparse(a) for a in st.value.args] == ["False"])
        )
        and st.lineno == st.end_lineno
        and st.lineno < line
        and function_of(tree, st.lineno) in (scope, None)
    ]
    return max(found) if found else None


def _training_flag(cls: type, model: torch.nn.Module) -> str | bool | None:
    """Whether the class's forward branches on ``self.training`` (False: it does not), and the attribute of a
    nested ``if self.<flag>:`` inside that branch, True on ``model`` (what eval() was likely meant to stop)."""
    import inspect

    try:
        source = textwrap.dedent(inspect.getsource(cls.forward))  # type: ignore[attr-defined]
    except (OSError, TypeError, AttributeError):
        return False
    forward = parse(source)
    if forward is None:
        return False
    branches = [
        n
        for n in ast.walk(forward)
        if isinstance(n, ast.If) and ast.unparse(n.test) in ("self.training", "self.training is True")
    ]
    if not branches:
        return False
    for branch in branches:
        for inner in (n for st in branch.body for n in ast.walk(st) if isinstance(n, ast.If)):
            test = inner.test
            if (
                isinstance(test, ast.Attribute)
                and isinstance(test.value, ast.Name)
                and test.value.id == "self"
                and getattr(model, test.attr, None) is True
            ):
                return test.attr
    return None


# NOTE [A model whose eval branch cuts]
# A model the loss goes through was put in eval mode by the code (to freeze a
# codebook's EMA updates, a batch norm's statistics), and its forward branches on
# self.training: the training branch builds the gradient path (a straight-through
# estimator, a reparameterised sample), the eval branch returns values without a
# graph. The loss then has no grad_fn. Seen on the loss's path: a statement calls
# that model on a tensor that requires grad and binds outputs that do not. When
# the training branch guards an update with a switch of its own (if
# self.ema_update:), the fix sets that switch off in place of .eval() (what eval()
# was meant to stop, keeping the gradient path); otherwise it puts the model back
# in training mode and says what else training mode runs.
