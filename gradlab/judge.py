"""Judging proposed fixes before any runs: against the loop's intent, what each claims, which comes first."""

from __future__ import annotations

from dataclasses import replace

from .context import Context
from .edits import Applicability
from .fixes import Fix, Proposal, checked, claim, merged
from .i18n import T, Text, join

__all__ = ["judged"]


def judged(proposals: list[Proposal], ctx: Context) -> tuple[Fix, ...]:
    """Each fix checked, its claims and applicability set against the code's intent; fitting fixes first.

    With the loop's intent known (:mod:`gradlab.loop`), a fix's claim is the models its loss reaches after
    it whose optimizer steps on that loss; a fix that stops the loss from training such a model says so and
    is never first.
    """
    intent = ctx.intent
    # what the loss meant to reach: also the maker a recompute reads without the critic's detach (NOTE [A recompute
    # for the loss that trains the maker])
    meant = tuple(sorted({*ctx.reach, *ctx.extra.get("undetach_reach", "").split()}))
    intended = _held(ctx, meant) if intent is not None and intent.known else None
    fitting: list[Fix] = []
    rest: list[Fix] = []
    for prop in proposals:
        fix = checked(prop.fix, ctx)
        if fix.keeps_forward is None:  # a fix computes what the failing code computed, unless it says otherwise
            fix = replace(fix, keeps_forward=True)
        if intent is None or intended is None or not ctx.loss or not ctx.reach:
            sure: Applicability = "machine-applicable" if prop.keeps else "maybe-incorrect"
            if not fix.claims and ctx.loss and prop.reach:  # without the loop's intent: what the loss reaches
                fix = replace(fix, claims=((ctx.loss, _outermost(ctx, prop.reach)),))
            fitting.append(replace(fix, applicability=sure if fix.code is not None else "sentence"))
            continue
        claimed = _held(ctx, prop.reach) if prop.reach is not None else set(dict(fix.claims).get(ctx.loss, ()))
        # a model another loss of the loop trains is not given up when this loss stops reaching it: an optimizer
        # stepped after several backwards is not asked to learn from each of them (an actor-critic's two losses;
        # NOTE [A model another loss trains])
        given_up = sorted(intended - claimed - set(ctx.shared))
        extra = sorted(claimed - intended)
        fix = replace(fix, claims=merged((*claim(ctx, claimed, prop.keeps), *ctx.other_claims)))
        if given_up:
            fix = replace(
                fix,
                trains=_gives_up(ctx, claimed, given_up),
                applicability="maybe-incorrect" if fix.code is not None else "sentence",
            )
            rest.append(fix)
        elif extra:
            rest.append(replace(fix, applicability="maybe-incorrect" if fix.code is not None else "sentence"))
        else:
            story_zeroes = (
                ctx.model is not None
                and "zero_grad()" in fix.trains
                and (intent.zeroer(ctx.model) is None or intent.zeroed_by_module(ctx.model))
            )
            if prop.describe or (prop.reach is not None and story_zeroes):
                # the loop's own words, where the story's (a zero_grad() the code does not have) would be false
                fix = replace(fix, trains=_trains_text(ctx, claimed, prop.reach))
            fitting.append(replace(fix, applicability="machine-applicable" if fix.code is not None else "sentence"))
    ordered = (*fitting, *rest)
    if ctx.intent_note:  # which reading each fix assumes: what ran, not what the source reads
        return tuple(replace(f, trains=T("{trains} ({note})", trains=f.trains, note=ctx.intent_note)) for f in ordered)
    return ordered


# NOTE [A model another loss trains]
# One optimizer stepped after two backward calls (an actor's loss, then a critic's) asks for the sum of their
# gradients; a fix that stops the actor's loss from reaching the critic still fits, because the critic, which
# judges the actor's output (its weights are applied to it), learns from its own loss. So does a fix that stops
# a value network's loss from reaching the generator it scores when the optimizer stepped right after that
# backward holds the value network only (the generator's own loss trains it). The exemption holds for those two:
# a judge (Topology.behind: a model applied to another model's output in the failing loss's graph), or a model
# the next step after the failing backward does not hold. An encoder whose output the loss reads beside
# another's (a neural process's latent path, concatenated with the deterministic one), held by the optimizer
# stepped right after, is neither: the loss is meant to train it, even if a KL term trains it too, and a fix
# that stops that is given up (checked for the context of a freed or stale graph; the no_grad_fn kind reads
# the frame only, as before).


def _held(ctx: Context, models: tuple[str, ...]) -> set[str]:
    """The models of ``models`` the loop's intent trains: named by it, or holding only parameters of the models it
    names (``V`` and ``K`` when the optimizer is read as stepping ``learn``, which holds them: NOTE [Models named
    two ways])."""
    trained = set(ctx.intent.trained) if ctx.intent is not None else set()
    held = ctx.site.modules if ctx.site is not None else {}
    params: set[int] = set().union(*(held.get(t, frozenset()) for t in trained))
    return {m for m in models if m in trained or (bool(held.get(m)) and held[m] <= params)}


# NOTE [Models named two ways]
# The loss's reach is read from the graph's leaves, by the innermost names the frame gives their parameters
# (V.0.weight: V); the loop's intent from its optimizers, by the outermost modules holding what they step
# (learn, which holds V through learn.model.f.V). By names alone the two never meet, and a fix's claim said
# its loss trained nothing. Compared by parameters, a model the loss reaches is one the intent trains when
# every parameter it holds is held by a model the intent names.


def _outermost(ctx: Context, models: tuple[str, ...]) -> tuple[str, ...]:
    """``models`` without those another of them holds (``self.net`` inside ``self``), by the site's parameters."""
    held = ctx.site.modules if ctx.site is not None else {}
    return tuple(
        sorted(
            m
            for m in set(models)
            if not any(o != m and m in held and o in held and held[m] < held[o] for o in models)
            and not any(m.startswith(o + ".") for o in models if o not in held or m not in held)
        )
    )


def _trains_text(ctx: Context, claimed: set[str], reach: tuple[str, ...] | None = None) -> Text:
    intent = ctx.intent
    trained = join(sorted(claimed), T(" and ")) if claimed else T("nothing")
    # the models the loss still reaches after the fix, whose gradient from it no step uses
    frozen = ctx.site.frozen if ctx.site is not None else frozenset()  # no parameter requires grad: no gradient
    dropped = [m for m in (ctx.reach if reach is None else reach) if m not in claimed and m not in frozen]
    if intent is not None and dropped:
        cleared = []
        for m in dropped:
            zero = intent.zeroer(m)
            if zero and intent.zeroed_by_module(m):
                cleared.append(T("{module}.zero_grad() clears it before it is stepped", module=zero))
            elif zero:
                cleared.append(T("{optimizer}.zero_grad() clears it before {optimizer}.step()", optimizer=zero))
            else:
                cleared.append(T("no optimizer steps {model} on it", model=m))
        return T(
            "{loss} trains {models}, as your loop's optimizers ask; its gradient for {others} is not used ({why})",
            loss=ctx.l,
            models=trained,
            others=join(dropped, T(" and ")),
            why=join(list(dict.fromkeys(cleared)), ", "),  # two models one optimizer clears: said once
        )
    return T("{loss} trains {models}, as your loop's optimizers ask", loss=ctx.l, models=trained)


def _gives_up(ctx: Context, claimed: set[str], given_up: list[str]) -> Text:
    intent = ctx.intent
    stepping = {intent.stepper(m) or "" for m in given_up} - {""} if intent is not None else set()
    steps = ", ".join(f"{opt}.step()" for opt in sorted(stepping))
    lost = join(given_up, T(" and "))
    if claimed:
        head = T("{loss} trains {models} only.", loss=ctx.l, models=join(sorted(claimed), T(" and ")))
    else:
        head = T("{loss} trains nothing.", loss=ctx.l)
    return (
        head
        + " "
        + T(
            "It gives up what your loop asks for: {steps} follows {loss}.backward(), so your loop means {lost} to "
            "learn from {loss}; with this fix {loss} no longer trains {lost}",
            loss=ctx.l,
            steps=steps or T("an optimizer step"),
            lost=lost,
        )
    )
