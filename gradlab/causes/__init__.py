"""Why a backward fails: the cause, decided from the graph, the tracker's record and the user's code.

:func:`decide` turns one :class:`gradlab.Problem` into a :data:`Cause` and the
:class:`Context` its fixes are written from; :func:`fixes_for` lists the fixes of
a cause, judged against the loop's intent (:mod:`gradlab.judge`). Each cause has
a module of its own here (its detector, its fixes, its sentence); this module
only dispatches. It reads:

- the graph (which named models each node reaches, which nodes were freed, the
  forward line that saved each tensor);
- the tracker's record, under :func:`gradlab.track` (which backward freed a node,
  which optimizer step wrote a weight, the backward calls before);
- the user's code around the failing line (:mod:`gradlab.loop`): which optimizers
  step on the failing loss, the statement that carries state across iterations,
  a list appended to in the loop, a forward computed before the loop.

``check()`` before a backward and the note after it decide alike: both compare
the freeing backward's line with the line being run now (NOTE [Previous iteration]
in :mod:`gradlab.evidence`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from ..candidates import after_write_lines, general_fixes, stale_reads
from ..claims import claims_of_others, intent_from_record, loop_claims, other_claims, term_claims
from ..context import CAUSES, Cause, Context
from ..evidence import (
    Facts,
    Problem,
    Topology,
    freeing_call,
    from_frame,
    graph_names,
    in_site,
    is_parameter,
    previous_iteration,
    receiver,
    routed_optimizers,
    same_root,
    sequence_of,
    short_name,
    stepped_between,
    stepped_ids,
    steps_between,
    tensors_below,
    torch_alias,
    var_named,
    written_by_steps,
)
from ..fixes import Fix, Proposal
from ..freed_candidates import apart_fixes, freed_fixes, routed_fixes
from ..graph import Graph
from ..i18n import T, Text
from ..judge import judged
from ..loop import helper_intent, site_intent
from ..parts import made_apart, made_apart_also, made_outside, stored_for_others
from ..source import outermost_loop
from .api_cache import (
    cached_around_loop,
    cached_inside_loop,
    hooked_weights,
    memoised_context,
    memoised_fixes,
    transform_cache_context,
    transform_cache_fixes,
    weight_norm_fixes,
)
from .attached_output import attached_fixes, attached_output_context
from .built_once import built_once_context
from .caller_boundary import caller_boundary, caller_boundary_fixes, handed_to_several, several_calls_fixes
from .caller_reach import reach_in_caller, with_bare_parameters
from .carried_state import carried_context, carried_fixes, carried_in_loop
from .carried_steps import restart_from_weights
from .chained import between_fixes, chained_fixes, freed_on_purpose_fix, recompute_lines, step_context
from .closure_step import closure_context, closure_fixes
from .discarded_detach import discarded_detach_fixes, hollow_detach
from .earlier_reach import earlier_reach_context, earlier_reach_fixes
from .fast_weights import fast_context, fast_weights_fixes
from .frozen_extractor import frozen_context
from .gradient_probe import probe_fix
from .handed_forward import handed_forward_context
from .handed_gradient import handed_context, handed_fixes
from .handed_state import handed_to_object
from .inplace_op import graph_buffers, in_place_fixes
from .kept_attribute import kept_attribute
from .kept_constant import kept_constant_context
from .list_never_cleared import buffer_context, buffered_fixes
from .module_state import kept_on_modules, module_state_fixes
from .object_state import kept_on_objects, object_reset_fixes
from .out_write import out_write_context, out_write_fixes
from .pruned_weight import pruned_context
from .reentrant_checkpoint import reentrant_context, reentrant_fixes
from .reset_at_step import reset_at_step_context, reset_every_backward_fixes
from .retained_accumulation import retained_fixes, retained_total
from .same_loss_twice import appended_loss, products_again, restarted_total, total_of_backwarded, twice_fixes
from .stale_forward import (
    caller_forward_context,
    global_forward_context,
    snapshot_context,
    stale_fixes,
    stale_forward_context,
)
from .stale_read import (
    made_read_here,
    rederived_context,
    stale_read_context,
    stale_read_fixes,
    updated_since_context,
)
from .step_before_backward import one_step_fixes, step_after_fixes, step_too_early, stepped_again
from .untracked_write import (
    copy_context,
    forward_write_context,
    parameter_write_context,
    target_context,
    untracked_fixes,
)
from .updates_between import updater, updates_between

if TYPE_CHECKING:
    from ..location import Location
    from ..recorder import BackwardCall
    from ..saved import Write

__all__ = ["Cause", "CAUSES", "Context", "decide", "fixes_for", "cause_sentence"]


def _cause_sentences() -> dict[Cause, Text]:
    return {
        "optimizer_step": T("an optimizer step changed a weight the graph saved, before that graph's backward ran"),
        "inplace_op": T("an in-place operation in the forward code overwrote a tensor autograd saved"),
        "untracked_write": T(
            "a write autograd could not record (under torch.no_grad(), through .detach(), or to data) "
            "overwrote a tensor autograd saved"
        ),
        "carried_state": T("state carried from one iteration to the next keeps the previous iteration's graph"),
        "shared_graph_freed": T("a second backward went through a part of the graph an earlier backward freed"),
        "same_loss_twice": T("the same loss was backwarded twice"),
        "stale_forward": T(
            "a forward computed once, before the loop, is reused by every iteration: the first backward freed its graph"
        ),
        "list_never_cleared": T(
            "a list that each iteration appends graph-holding tensors to is never cleared: the next backward goes "
            "through the earlier iterations' freed graphs"
        ),
        "fast_weights_in_place": T(
            "fast weights are updated in place inside a loop over them: autograd saved them for the gradient that "
            "is still to be taken"
        ),
        "step_before_backward": T(
            "the optimizer step that should use this loss's gradient runs between the loss's forward and its "
            "backward: it steps on the previous iteration's gradient and changes weights this graph saved"
        ),
        "retained_accumulation": T(
            "a running total of the losses is backwarded at every iteration with retain_graph=True: each backward "
            "goes through every earlier iteration's graph again, whose weights a step has changed since"
        ),
        "attached_output": T(
            "a loss your loop does not train this model with (a gradient penalty, a discriminator's loss) is built "
            "on the model's output without .detach(): its backward went through the model's graph and freed it, "
            "and a later loss that trains the model needs that graph"
        ),
        "handed_gradient": T(
            "a gradient is handed back by hand (split learning, a pipeline written by hand), but the tensor was "
            "handed over without a cut: the receiving side's backward went on through the sender's graph and freed "
            "it before the sender's own backward"
        ),
        "reentrant_checkpoint": T(
            "a reentrant checkpoint ran a backward of its own inside yours, through a tensor its function reads from "
            "outside its arguments, and freed a part of the graph a later backward needs"
        ),
        "closure_step": T(
            "the closure an optimizer's step calls (LBFGS calls it several times a step) backwards through a forward "
            "computed outside it: the second call finds that graph freed"
        ),
        "stale_read": T(
            "the loss reads a tensor of an earlier forward (whose graph an earlier backward freed, or whose weights a "
            "step changed since), where the forward computed since was meant"
        ),
        "unknown": T("gradlab cannot tell what changed the tensor (it was not watching when it happened)"),
    }


def cause_sentence(cause: Cause) -> Text:
    """One sentence saying what the cause means (in the language of :func:`gradlab.set_language`)."""
    return _cause_sentences()[cause]


def decide(p: Problem, graph: Graph, topo: Topology, facts: Facts) -> tuple[Cause, Context]:
    """The cause of ``p`` and the context its fixes are written from."""
    failing = facts.failing
    loss = receiver(failing.location.code, "backward") if failing is not None and failing.location else None
    if loss is None and facts.site is not None and facts.backward_line is not None:
        loss = receiver(facts.site.text(facts.backward_line), "backward")
    root = topo.by_id[graph.outputs[0]] if graph.outputs else None
    if loss is None and root is not None:
        loss = var_named(
            facts.namespace,
            lambda t: t.grad_fn is not None and sequence_of(t.grad_fn) == root.seq and t.grad_fn.name() == root.name,
        )
    node_id = p.node_id if p.node_id is not None else graph.outputs[0]
    model = topo.owner(p.given)
    if model is None and p.kind == "graph_freed":
        owners = topo.models_below(node_id)
        model = next(iter(owners)) if len(owners) == 1 else None
    reach = tuple(sorted(topo.models_below(graph.outputs[0]))) if graph.outputs else ()
    others = tuple(m for m in reach if m != model) if model else ()
    site = facts.site
    intent = site_intent(site, facts.backward_line) if site is not None and facts.backward_line else None
    intent, intent_note = intent_from_record(facts, intent, loss)
    if (intent is None or not intent.known) and site is not None and facts.backward_line is not None:
        # NOTE [A backward in a helper that does not step]: when the caller's names are the helper's (self.student
        # in both methods of one trainer); a function's arguments name the models otherwise
        helper = helper_intent(facts.caller_site, facts.caller[1] if facts.caller else None)
        if helper is not None and set(helper.trained) & set(
            topo.models_below(graph.outputs[0]) if graph.outputs else ()
        ):
            intent = helper
    base = Context(
        tensor=p.tensor,
        model=model,
        others=others,
        loss=loss,
        site=site,
        intent=intent if intent is not None and intent.known else None,
        reach=reach,
        backward_line=facts.backward_line,
        intent_note=intent_note,
        # the frame's tensors that still have a graph (a recompute that reads one needs it kept)
        extra={"graph_names": " ".join(sorted(graph_names(facts.namespace)))},
    )

    base = replace(base, reach=with_bare_parameters(base.reach, facts, loss))
    if not base.reach:  # NOTE [Models named by the caller's loop]
        called = reach_in_caller(facts, loss)
        base = replace(base, reach=called, model=called[0] if len(called) == 1 and base.model is None else base.model)
    # per named term only where the fixes keep every term's reach (a write's out-of-place form, a copy): a freed
    # graph's fixes may cut a term's path (a constant detached), so its reach before the fix says nothing
    terms = term_claims(site, facts.namespace, loss) if p.kind == "modified_in_place" else ()
    base = replace(base, other_claims=other_claims(facts, loss), terms=terms)
    shared = claims_of_others(facts.site, facts.backward_line, facts.namespace, loss, same_steps=True)
    # NOTE [A model another loss trains]: a judge (the critic the actor's loss reaches), or a model the optimizer
    # stepped right after this backward does not hold; not an encoder of that step whose output the loss reads
    # (the first step that trains something with it: an optimizer of a model frozen at this backward trains nothing)
    plans = base.intent.plans if base.intent is not None else ()
    first = next((plan for plan in plans if plan.steps and plan.modules), None)
    stepped_next = set(first.modules) if first is not None else set()
    exempt = {m for _loss, models in shared for m in models if topo.behind({m}) or m not in stepped_next}
    base = replace(base, shared=tuple(sorted(exempt)))
    if p.kind == "modified_in_place":
        base = replace(base, stale=stale_reads(graph, p))
        writes = p.writes
        if not writes and p.counter_missed:  # changed behind the counter by a writer gradlab did not see
            return "untracked_write", replace(base, tensor=short_name(p), op=None)
        out = out_write_context(base, p) if not writes else None  # NOTE [A write through out=]: no record
        if out is not None:
            return "inplace_op", replace(out, tensor=short_name(p), op=None)
        optimizer_write = next((w for w in writes if w.optimizer), None)
        if optimizer_write is not None or (not writes and is_parameter(p)):
            stepper = (
                receiver(optimizer_write.location.code, "step")
                if optimizer_write is not None and optimizer_write.location
                else None
            )
            base = from_frame(base, facts, stepper)
            rederived = rederived_context(base, p, facts, graph)
            if rederived is not None:
                return "stale_read", rederived
            retained = retained_total(base, facts)  # read from the source alone: check() sees it too
            if retained is not None:
                return "retained_accumulation", retained
            if previous_iteration(p, graph, node_id, facts, None):
                stale = stale_forward_context(base, p, facts, graph)
                if stale is not None:
                    return "stale_forward", stale
                # a state the model keeps on its modules, read by the next forward with the graph of the one before
                # (whose saved weights the step wrote): read from the modules, as for a freed graph
                on_modules = kept_on_modules(base, facts) if carried_in_loop(facts) is None else None
                return "carried_state", on_modules or carried_context(base, graph, topo, facts)
            early = step_too_early(base, facts, optimizer_write)
            if early is not None:
                return "step_before_backward", replace(early, recompute_lines=recompute_lines(early, graph, p, facts))
            ctx = step_context(base, p, graph, topo, facts, optimizer_write, node_id)
            ctx = stepped_again(ctx, facts) or ctx  # NOTE [One optimizer stepped twice on one forward]
            if facts.tracker is not None:  # NOTE [A backward routed into what its optimizers hold]
                written = written_by_steps(facts.tracker, graph)
                ctx = replace(ctx, routed=routed_optimizers(topo, facts, ctx.intent, written, failing))
            return "optimizer_step", ctx
        if writes:
            w = writes[0]
            code = w.location.code if w.location else None
            # the graph's parameters without names (a model held by a plain object): the reach read from the frame
            base = from_frame(base, facts, None)
            ctx = replace(
                base,
                saved_at=p.saved_at,
                tensor=short_name(p),
                op=w.op,
                code=code,
                where=w.where,
                write_at=w.location,
                write_into_view=w.into_view,
                other_writes=_other_writes(graph, w),
            )
            ctx = replace(ctx, after_write=after_write_lines(ctx, graph, p, facts))
            alias, buffers = torch_alias(facts.namespace), graph_buffers(str(short_name(p)), facts.namespace)
            if any(n.name.endswith("CopyBackwards") for n in graph.nodes):
                # the saved tensor is the buffer as an earlier write of this graph left it (``copy_`` from a value
                # with a graph): the code as written trains through it, from one chunk's forward to the next
                buffers = ()
            if alias and buffers:  # NOTE [A buffer updated with values that have a graph]
                ctx = replace(ctx, extra={**ctx.extra, "graph_buffer": alias, "graph_buffers": ",".join(buffers)})
            fast = fast_context(ctx, w, facts)
            if fast is not None:
                return "fast_weights_in_place", fast
            if all(x.grad_mode for x in writes):
                return "inplace_op", ctx
            return "untracked_write", (
                target_context(ctx, p, facts)
                or parameter_write_context(
                    ctx, p, w, facts
                )  # NOTE [A parameter constrained inside its module's forward]
                or copy_context(ctx, p, w)
                or forward_write_context(ctx, p, w, facts)  # NOTE [A write a module's forward makes on itself]
                or ctx
            )
        # Outside a tracker: the writer is unknown. A non-parameter was changed by the user's own code.
        return "inplace_op", replace(base, tensor=short_name(p), op=None)

    # graph freed (the models the loss reaches read from its tensor when the graph's parameters have no names)
    base = from_frame(base, facts, None)
    hollow = hollow_detach(facts)  # NOTE [A detach method that detaches nothing]
    if hollow is not None:
        base = replace(base, extra={**base.extra, **hollow})
    handed = handed_context(base, facts)  # NOTE [A gradient handed back across a cut]
    if handed is not None:
        return "handed_gradient", handed
    made = made_apart(graph, p, facts, loss, base.intent)
    if made is not None:
        also = made_apart_also(graph, p, facts, loss, base.intent, made[0])
        base = replace(base, made_at=made[0], made_unstepped=made[1], made_also=also)
        # returned by a function of its own (a generator's forward), or stored on an attribute a third function
        # reads, which other losses train through: detached where this loss reads it, so the others keep their
        # graph (NOTE [A part no optimizer steps]); a value a method stores for this loss alone (a bank's refresh)
        # is detached where it is made
        returned = (made[0].code or "").strip().startswith("return ") or stored_for_others(made[0], facts)
        reads = made_read_here(graph, p, facts) if made[1] and returned and in_site(facts, made[0]) is None else ()
        if reads and len({expr for _line, expr in reads}) == 1:
            base = replace(base, extra={**base.extra, "made_read": ";".join(f"{k}:{e}" for k, e in reads)})
    cached = cached_around_loop(facts)  # NOTE [A cache entered around the loop]
    if cached is not None:
        base = replace(base, extra={**base.extra, "cached_with": f"{cached[0]}:{cached[1]}"})
    hooked = hooked_weights(facts, graph, p)  # NOTE [A weight a forward pre-hook computes]
    if hooked:
        return "stale_forward", replace(base, extra={**base.extra, "weight_norm": ",".join(hooked)})
    memo = memoised_context(base, p, facts, graph)  # NOTE [A memoised function that returns a tensor]
    if memo is not None:
        return "carried_state", memo
    outside = made_outside(graph, p, facts, loss, base.intent)  # NOTE [A part made before the loop]
    if outside:  # (its line may be unknown, or one a .detach() cannot be put on: a return of two)
        base = replace(base, extra={**base.extra, "made_outside": ",".join(":".join(o) for o in outside)})
    if products_again(freeing_call(p, facts), failing):  # NOTE [Products through one graph]
        # autograd.grad trains nothing: what the loss trains is what its own backward elsewhere in the loop does
        ctx = _products_context(base, facts, loss)
        if ctx.intent is not base.intent:  # read again with the training loop's intent
            again = made_apart(graph, p, facts, loss, ctx.intent)
            ctx = replace(ctx, made_at=again[0] if again else None, made_unstepped=again[1] if again else False)
        return "same_loss_twice", ctx
    call_freeing = freeing_call(p, facts)
    reentrant = reentrant_context(base, facts, call_freeing is not None and call_freeing.nested)
    if reentrant is not None:  # NOTE [A backward a reentrant checkpoint runs]
        return "reentrant_checkpoint", reentrant
    closure = closure_context(base, facts)
    if closure is not None:
        return "closure_step", closure
    built = built_once_context(base, p, facts, graph)  # NOTE [A tensor built once in a constructor]
    if built is not None:
        return "stale_forward", built
    pruned = pruned_context(base, p, facts, graph)
    if pruned is not None:
        return "stale_forward", pruned
    stale_read = (
        stale_read_context(base, p, facts, graph)
        or rederived_context(base, p, facts, graph)
        or updated_since_context(base, p, facts, graph)  # NOTE [A tensor read again after the update that freed it]
    )
    if stale_read is not None:
        return "stale_read", stale_read
    frozen = frozen_context(base, p, facts, graph)
    if frozen is not None:
        return "stale_forward", frozen
    parts = total_of_backwarded(graph, facts)
    if parts:  # NOTE [A total of losses already backwarded]
        # one name for the parts (a helper's loss_D, once per model): what trains is named by it
        named = parts[0] if len(parts) == 1 and loss else loss
        extra = {**base.extra, "total_of": ",".join(parts), "total": loss or ""}
        return "same_loss_twice", replace(base, loss=named, earlier=named, extra=extra)
    restarted = restarted_total(facts.site, loss, facts.backward_line, graph_names(facts.namespace))  # NOTE [A total
    # not started again]
    if restarted is not None:  # read from the source: check() before the backward says what the note says
        return "same_loss_twice", replace(base, earlier=loss, earlier_line=restarted[0])
    call = freeing_call(p, facts)
    appended = appended_loss(facts, loss) if call is not None and same_root(call, root, failing) else None
    if appended is not None:  # NOTE [A loss read back from a list by an old index]
        extra = {**base.extra, "appended": appended[0], "read": loss or ""}
        return "same_loss_twice", replace(base, loss=appended[0], reach=appended[1], extra=extra)
    if call is not None and (same_root(call, root, failing) or _same_statement_again(call, failing, facts)):
        earlier_line = in_site(facts, call.location)
        # the earlier backward in another function (a criterion's, then the task's): the failing one may still go
        elsewhere = (
            earlier_line is None
            and call.location is not None
            and call.location is not (failing.location if failing is not None else None)
        )
        extra = {**base.extra, "earlier_elsewhere": "1"} if elsewhere else dict(base.extra)
        if facts.tracker is not None and facts.site is not None:  # NOTE [A step repeated with the second backward]
            ids = stepped_ids(facts.tracker, call, failing)
            already_stepped = sorted(name for name, held in facts.site.optimizers.items() if held & ids)
            if already_stepped:
                extra["stepped_since"] = ",".join(already_stepped)  # the frame's optimizers that already stepped
        if call.kind == "autograd.grad" and call.location is not None:  # NOTE [A gradient taken, then the same loss
            # backwarded]: where that call is, in this function or another
            extra["grad_first_at"] = f"{call.location.lineno}:{call.location.filename}"
        # one wrapper's backward line reached from two callers (a criterion's optimizer.backward(loss), then the
        # task's): the failing caller's statement is the second call
        # (check() runs before the failing backward: its own caller's line is that backward's caller)
        here = failing.location if failing is not None else None
        mine = (here.callers[0].filename, here.callers[0].lineno) if here is not None and here.callers else None
        if mine is None and failing is None:
            mine = facts.caller
        theirs = call.location.callers if call.location is not None else ()
        at = (
            (here.filename, here.lineno)
            if here is not None
            else ((facts.site.filename, facts.backward_line) if facts.site is not None else None)
        )
        if (
            mine is not None
            and theirs
            and call.location is not None
            and (call.location.filename, call.location.lineno) == at
            and mine != (theirs[0].filename, theirs[0].lineno)
        ):
            extra["delete_in"], extra["delete_at"] = mine[0], str(mine[1])
        return "same_loss_twice", replace(base, earlier=loss, earlier_line=earlier_line, extra=extra)
    if previous_iteration(p, graph, node_id, facts, call):
        listed = buffer_context(base, graph, facts, call)
        if listed is not None:
            return "list_never_cleared", listed
        retained = retained_total(base, facts)
        if retained is not None:
            return "retained_accumulation", retained
        stale = (
            snapshot_context(base, facts, call)
            or stale_forward_context(base, p, facts, graph)
            or global_forward_context(base, p, facts, graph)
            or caller_forward_context(base, facts)
            or handed_forward_context(base, p, facts, graph)
            or kept_constant_context(base, p, facts, graph)
        )
        if stale is not None:
            return "stale_forward", stale
        if "cached_with" in base.extra:  # NOTE [A cache entered around the loop]: computed once, before the loop
            return "stale_forward", base
        if "made_outside" in base.extra and carried_in_loop(facts) is None:  # NOTE [A part made before the loop]
            return "stale_forward", base
        cache = transform_cache_context(base, p, facts, graph)  # NOTE [A transform's cache kept across iterations]
        if cache is not None:
            return "carried_state", cache
        reset = reset_at_step_context(base, p, facts, graph)  # NOTE [A reset only at the step]
        if reset is not None:
            return "carried_state", reset
        kept = None
        if carried_in_loop(facts) is None:
            on_modules = kept_on_modules(base, facts)
            # NOTE [A recurrent layer's state kept on its model]: one prediction per sequence, the state left out
            per_sequence = on_modules is not None and bool(on_modules.extra.get("per_sequence"))
            # a state over the steps of one input with its class's reset: the reset, not a detach inside the steps
            stepwise = on_modules is not None and on_modules.stepwise and bool(on_modules.resets)
            kept = (on_modules if per_sequence or stepwise else None) or kept_attribute(base, facts) or on_modules
            kept = kept or handed_to_object(base, facts)  # NOTE [A state handed to an object to keep]
            kept = kept or kept_on_objects(base, facts)
        if kept is not None:
            return "carried_state", kept
        carried = carried_context(base, graph, topo, facts)
        tracker = facts.tracker
        freeing = in_site(facts, call.location) if call is not None and tracker is not None else None
        if (  # NOTE [A state carried within one step]
            freeing is not None
            and tracker is not None
            and call is not None
            and not steps_between(tracker, call, failing)
            and not updates_between(facts, call, failing)
        ):
            carried = replace(carried, extra={**carried.extra, "one_step": str(freeing)})
        return "carried_state", carried
    if call is None:  # no record of the freeing backward: a graph built once, whose saves no hook saw (a number
        # torch wraps as a tensor: 3 * x), through any of the graph's freed nodes
        freed = [p.node_id, *sorted({s.node_id for s in graph.saved if s.status == "freed"} - {p.node_id})]
        for candidate in freed:
            kept_constant = kept_constant_context(base, p, facts, graph, candidate)
            if kept_constant is not None:
                return "stale_forward", kept_constant
    freed_node = next((n for n in graph.nodes if n.id == node_id), None)
    state = kept_on_modules(base, facts, holding=freed_node) if freed_node is not None else None
    if state is not None:  # NOTE [A module's state read by a second forward]
        return "carried_state", state
    attached = attached_output_context(base, topo, facts, node_id)
    if attached is not None:
        return "attached_output", attached
    if root is not None and node_id == root.id:
        return "same_loss_twice", base
    earlier = receiver(call.location.code, "backward") if call is not None and call.location else None
    ctx = replace(base, earlier=earlier, earlier_line=in_site(facts, call.location) if call is not None else None)
    if ctx.earlier_line is None and call is not None and call.location is not None:
        # the earlier backward in another function of the user's code (a strategy's, then a plugin's): its line
        ctx = replace(ctx, extra={**ctx.extra, "earlier_at": f"{call.location.lineno}:{call.location.filename}"})
    steps = steps_between(facts.tracker, call, failing) if facts.tracker is not None and call is not None else []
    if not steps and call is not None:
        steps = updates_between(facts, call, failing)
    if steps and steps[0][0] is not None:
        # the step's optimizer too: the forward of the model it stepped is what a recompute runs again
        ctx = replace(ctx, step_line=in_site(facts, steps[0][0]), optimizer=updater(steps[0][0].code))
    ctx = step_context(ctx, p, graph, topo, facts, None, node_id)
    if call is not None:
        stepped = stepped_between(facts, call, failing)
        ctx = replace(
            ctx,
            freeing_at=call.location,
            freed_reach=tuple(sorted({*topo.models_below(node_id), *tensors_below(graph, node_id, facts, loss)})),
            stepped_between=stepped,
            behind_stepped=tuple(sorted(topo.behind(stepped))),
            routed=routed_optimizers(
                topo, facts, ctx.intent, stepped_ids(facts.tracker, call, failing) if facts.tracker else set(), failing
            ),
        )
    if facts.tracker is not None and call is not None:
        ctx = replace(ctx, step_between=bool(steps))
        if steps and steps[0][0] is not None:
            ctx = replace(ctx, optimizer=updater(steps[0][0].code), optimizer_class=steps[0][1])
    modules = facts.site.modules if facts.site is not None else {}
    freed_models = tuple(m for m in ctx.freed_reach if m in modules)
    if (
        ctx.earlier
        and ctx.earlier.isidentifier()
        and ctx.earlier != loss
        and ctx.earlier_line is None
        and call is not None
        and call.kind != "autograd.grad"  # its gradients are returned, not put into .grad: it trains nothing
        and ctx.step_between is False
        and freed_models
        and ctx.earlier not in dict(ctx.other_claims)
    ):
        # the earlier backward in another function (a training step's own penalty): the loop's claims do not see
        # it, and no step comes between: the step that uses the failing loss's gradient uses its gradient too,
        # through the part they share
        ctx = replace(ctx, other_claims=(*ctx.other_claims, (ctx.earlier, freed_models)))
    # NOTE [A value the caller's loop hands to several updates], NOTE [A value formed in the caller's loop from a
    # model stepped there]
    return "shared_graph_freed", (
        handed_to_several(ctx, facts, call)
        or caller_boundary(ctx, facts, call)
        or earlier_reach_context(ctx, facts, graph, node_id, call)  # NOTE [An earlier loss that reaches a model it
        # does not train]
        or ctx
    )


def _other_writes(graph: Graph, first: Write) -> tuple[tuple[Location | None, str, bool], ...]:
    """The first write of each saved tensor of ``graph`` made stale on another line than ``first``'s, as (line, op,
    recorded by autograd): a fix of ``first`` alone leaves the backward failing on theirs. Of a tensor ``first``
    wrote too, its writes on other lines, before and after ``first``'s (``widths /= c`` then ``heights /= c``, two
    slices of one output): the out-of-place form of ``first`` alone leaves them writing the saved tensor."""
    at = first.location
    found: dict[tuple[str, int], tuple[Location | None, str, bool]] = {}
    for s in graph.saved:
        if s.status != "modified_in_place" or not s.writes:
            continue
        spots = [(w.location.filename, w.location.lineno) if w.location is not None else None for w in s.writes]
        here = (at.filename, at.lineno) if at is not None else None
        if here is not None and here in spots:
            # the other writes of a tensor ``first`` wrote too: later ones, and earlier ones on other lines (two
            # slices of one tensor written on two lines, both after the save)
            own = s.writes[spots.index(here)]
            later = [w for w in s.writes if w.location is not None and w is not own]
            for w in later:
                key = (w.location.filename, w.location.lineno)  # type: ignore[union-attr]
                if key != here:
                    found.setdefault(key, (w.location, w.op, w.grad_mode and not w.optimizer))
            continue
        w = s.writes[0]
        key = (w.location.filename, w.location.lineno) if w.location is not None else ("", 0)
        found.setdefault(key, (w.location, w.op, w.grad_mode and not w.optimizer))  # no line: no code fixes it
    return tuple(found.values())


def _same_statement_again(call: BackwardCall, failing: BackwardCall | None, facts: Facts) -> bool:
    """The freeing backward is a second copy of the failing statement (``(w * loss).backward()`` twice, each a new
    product of one graph) on another line, with no optimizer step between: the same loss backwarded twice."""
    if failing is None or call.location is None or failing.location is None or call is failing:
        return False
    a, b = call.location, failing.location
    if a.filename != b.filename or a.lineno == b.lineno or (a.code or "").strip() != (b.code or "").strip():
        return False
    return facts.tracker is None or not steps_between(facts.tracker, call, failing)


def fixes_for(cause: Cause, ctx: Context | None = None) -> tuple[Fix, ...]:
    """The fixes that fit ``cause``, the likeliest intent first, in the words of ``ctx``.

    Each fix's code is the text of its edits of the user's file (``ctx.site``), set
    only when :func:`gradlab.edits.check_edits` passes; each fix is judged against
    the code's intent (``ctx.intent``): a fix that stops the loss from training
    models the code's optimizers step on it is never first, and says so.
    """
    ctx = ctx or Context()
    proposals: list[Proposal]
    if cause == "optimizer_step":
        proposals = between_fixes(ctx, False) if ctx.judge else chained_fixes(ctx, False)
        proposals = [*one_step_fixes(ctx), *proposals]
    elif cause == "shared_graph_freed":
        proposals = between_fixes(ctx, True) if ctx.judge else chained_fixes(ctx, True)
        probe = probe_fix(ctx)  # NOTE [A backward run to read a gradient]
        on_purpose = freed_on_purpose_fix(ctx)  # NOTE [A graph freed on purpose]
        proposals = [
            *([on_purpose] if on_purpose is not None else []),
            *([probe] if probe is not None else []),
            *earlier_reach_fixes(ctx),
            *several_calls_fixes(ctx),
            *caller_boundary_fixes(ctx),
            *proposals,
        ]
    elif cause == "inplace_op":
        proposals = in_place_fixes(ctx)
    elif cause == "untracked_write":
        proposals = untracked_fixes(ctx)
    elif cause == "carried_state":
        proposals = module_state_fixes(ctx) if ctx.kept_attrs else carried_fixes(ctx)
        # the state kept on an object that takes virtual steps: built again at each iteration first (NOTE [An
        # object that takes virtual steps]; carried_fixes orders it itself)
        restart = restart_from_weights(ctx) if ctx.kept_attrs else None
        proposals = [
            *([restart] if restart is not None else []),
            *reset_every_backward_fixes(ctx),
            *object_reset_fixes(ctx),
            *proposals,
        ]
    elif cause == "same_loss_twice":
        proposals = twice_fixes(ctx)
    elif cause == "stale_forward":
        proposals = stale_fixes(ctx)
    elif cause == "list_never_cleared":
        proposals = buffered_fixes(ctx)
    elif cause == "fast_weights_in_place":
        proposals = fast_weights_fixes(ctx)
    elif cause == "step_before_backward":
        proposals = step_after_fixes(ctx)
    elif cause == "retained_accumulation":
        proposals = retained_fixes(ctx)
    elif cause == "attached_output":
        proposals = attached_fixes(ctx)
    elif cause == "closure_step":
        proposals = closure_fixes(ctx)
    elif cause == "reentrant_checkpoint":
        proposals = reentrant_fixes(ctx)
    elif cause == "handed_gradient":
        proposals = handed_fixes(ctx)
    elif cause == "stale_read":
        proposals = stale_read_fixes(ctx)
    else:  # unknown: the two likeliest families, each with what it trains
        proposals = [*in_place_fixes(ctx)[:1], *chained_fixes(ctx, False)[:1], *carried_fixes(ctx)[:1]]
    if cause == "shared_graph_freed":
        found = _with_general(proposals, freed_fixes(ctx), keep_first=True)
        return judged(found or [_one_backward_per_forward(ctx)], ctx)
    if cause == "optimizer_step" and ctx.routed:
        # the cause's own backward into the downstream model's parameters (the course's chain) already routes it
        routes = any("inputs=" in e.text for p in proposals for e in p.fix.edits)
        return judged(_with_general(proposals, [*([] if routes else routed_fixes(ctx)), *general_fixes(ctx)]), ctx)
    cached = cached_inside_loop(ctx)  # a torch API entered around the loop: its documented place, first
    if cached is not None:
        proposals = [cached, *proposals]
    discarded, first = discarded_detach_fixes(ctx)  # NOTE [A detach whose result is thrown away]
    proposals = [*discarded, *proposals] if first else [*proposals, *discarded]
    # a torch API's cache, or a weight computed by weight_norm's hook: torch's documented fix, first
    proposals = [
        *memoised_fixes(ctx),
        *weight_norm_fixes(ctx),
        *transform_cache_fixes(ctx),
        *out_write_fixes(ctx),
        *proposals,
    ]
    if ctx.made_at is not None or "made_outside" in ctx.extra:  # a freed graph, whatever its cause
        cut = {item.partition(":")[0] for item in ctx.extra.get("made_outside", "").split(",") if item}
        partial = [p for p in proposals if _detaches_some(p, cut)]  # it would find the others' part freed
        # a recompute that draws its random numbers again computes other values: the detach where the part was made
        # keeps them, and no optimizer steps what it cuts off (keep_first)
        ordered = _with_general([p for p in proposals if p not in partial], apart_fixes(ctx), keep_first=True)
        return judged([*ordered, *partial], ctx)
    return judged(_with_general(proposals, general_fixes(ctx)), ctx)


def _detaches_some(p: Proposal, names: set[str]) -> bool:
    """``p`` only detaches names (``x = x.detach()``), some of ``names`` but not all: the names that hold the freed
    part of the graph before the loop (NOTE [A part made before the loop])."""
    targets = set()
    for e in p.fix.edits:
        for line in e.text.splitlines():
            m = re.match(r"\s*(\w+) = .*\.detach\(\)", line)
            if m is None:
                return False
            targets.add(m[1])
    return bool(targets) and targets < names


def _one_backward_per_forward(ctx: Context) -> Proposal:
    """What every freed graph asks, as a sentence, when no rewrite of the code fits (two parts of a framework's
    code each running the backward of one loss, with a step between)."""
    where = ctx.freeing_at.where if ctx.freeing_at is not None else None
    return Proposal(
        Fix(
            summary=T(
                "{loss} goes through a part of the graph the backward at {where} freed ({earlier} there): run one "
                "backward per forward, by keeping one of the two backward calls, or by computing {loss} from a "
                "fresh forward",
                loss=ctx.l,
                where=where,
                earlier=ctx.earlier or T("an earlier loss"),
            )
            if where
            else T(
                "{loss} goes through a part of the graph an earlier backward freed: run one backward per forward, by "
                "keeping one of the two backward calls, or by computing {loss} from a fresh forward",
                loss=ctx.l,
            ),
            trains=T("{loss} then trains what it reaches, once, from a graph no backward freed", loss=ctx.l),
        ),
        ctx.reach,
        False,
    )


def _with_general(proposals: list[Proposal], general: list[Proposal], keep_first: bool = False) -> list[Proposal]:
    """The cause's fixes with code, then the general candidates it does not already make, then its sentences
    (NOTE [Candidates] in :mod:`gradlab.candidates`).

    ``keep_first``: a general candidate that computes what the failing code computed comes before a cause's fix
    that does not (for a freed graph: a recompute after a step the loss does not need gives other values, where
    the code as written asks for these)."""
    made = {p.fix.edits for p in proposals if p.fix.edits}
    extra = [g for g in general if g.fix.edits not in made]
    coded = [p for p in proposals if p.fix.edits]
    keep = [g for g in extra if g.fix.keeps_forward] if keep_first else []
    if keep:
        kept = [p for p in coded if p.fix.keeps_forward is not False]
        return [
            *kept,
            *keep,
            *(p for p in coded if p not in kept),
            *(g for g in extra if g not in keep),
            *(p for p in proposals if not p.fix.edits),
        ]
    return [*coded, *extra, *(p for p in proposals if not p.fix.edits)]


def _products_context(base: Context, facts: Facts, loss: str | None) -> Context:
    """The context of ``torch.autograd.grad`` run again on one graph (NOTE [Products through one graph]).

    autograd.grad trains nothing: what the loss trains is what its own ``backward()``
    elsewhere in the loop does, read where that call is (in the training loop, when the
    products are taken in an inner loop over inputs).
    """
    site, line = facts.site, facts.backward_line
    tree = site.tree() if site is not None else None
    claims = claims_of_others(site, line, facts.namespace, None)
    extra = {**base.extra, "products": "1"}
    if site is None or tree is None or line is None or not loss:
        return replace(base, other_claims=claims, extra=extra)
    outer = outermost_loop(tree, line)
    body = outer.body if outer is not None else list(tree.body)
    own = next(  # the loss's own backward in the training loop
        (
            n.lineno
            for st in body
            for n in ast.walk(st)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "backward"
            and ast.unparse(n.func.value) == loss
        ),
        None,
    )
    intent = site_intent(site, own) if own is not None else None
    caller = facts.caller_loop
    if own is None and not claims and caller is not None:  # a helper that takes the products: its caller's loop
        # the fix changes nothing of the training: what each loss the caller's loop backwards trains, as it stands
        claims = loop_claims(caller.site, {}, caller.line)
        intent = site_intent(caller.site, caller.line) if claims else None
    if intent is None or not intent.known:
        return replace(base, other_claims=claims, extra=extra)
    return replace(base, intent=intent, other_claims=claims, extra=extra)
