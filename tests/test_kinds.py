"""Every kind of autograd error diagnosed, located and fixed, on a user-style script written for it.

Each script of tests/scripts/kinds/ fails with one kind (the cut graph of GL0003 in its shapes, a write to a leaf,
a write to a parameter's views in its init, an inference tensor saved, ``.numpy()``, a non-scalar backward, an
LBFGS closure, a forward built before the loop) and has a hand-corrected ``NAME_intended.py``. For each: under
``track()`` the error has a diagnosis of its kind (NOTE [Every kind diagnosed] in gradlab.kinds) whose note
quotes the lines that explain it; its first fix is checked code, and applied exactly as printed the script runs
and every optimizer step uses the gradients of the intended version (real torch as the oracle); its claims are
what the intended version's losses train.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from test_causes import _run, _same, variant_diagnosis

import gradlab
from gradlab.edits import apply_edits

pytestmark = pytest.mark.library

KINDS = Path(__file__).parent / "scripts" / "kinds"

# script -> (kind, lines the note quotes, what each loss trains after the first fix)
EXPECTED: dict[str, tuple[str, tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]]] = {
    "item_rebuilt": (
        "no_grad_fn",
        ("value = mse.item()", "objective = torch.tensor(value, requires_grad=False) * 1.0"),
        (("objective", ("net",)),),
    ),
    # NOTE [A name the cut block reads and rebinds]: the output's name rebound inside the no_grad block to a frozen
    # network's features; the claim follows the earlier binding to the upscaler
    "perceptual_features_rebound_under_no_grad": (
        "no_grad_fn",
        ("with torch.no_grad():",),
        (("perceptual", ("upscaler",)),),
    ),
    # NOTE [numpy's result made a constant on its line]: numpy's product turned back into a tensor on the same line,
    # inside a helper whose result feeds the loss: the tensor numpy is given is detached there
    "smoothness_helper_numpy_constant": (
        "numpy_requires_grad",
        ("lap_pred = torch.as_tensor(np.matmul(lap, flat), dtype=torch.float32)",),
        (("total", ("net",)),),
    ),
    # NOTE [A parameter scaled by its own gradient's norm]: a gradient limiter divides each parameter (not its
    # gradient) by a ratio computed from its gradient's norm: the write goes into the gradient
    "rescale_helper_divides_weights": (
        "leaf_in_place",
        ("weight /= ratio",),
        (("err", ("regressor",)),),
    ),
    # NOTE [numpy's values handed to code outside torch]: the arm probabilities go to a pure-numpy environment's
    # method; what comes back is numpy's numbers either way: the tensor numpy is given is detached there
    # NOTE [A numpy round trip through a helper]: the codes detached, decoded by a numpy helper and copied back with
    # torch.tensor: the helper written with torch, called on the codes
    "denoiser_codes_decoded_in_numpy": (
        "no_grad_fn",
        ("recon = torch.tensor(decode_codes(codes.detach().numpy()), dtype=torch.float32)",),
        (("rec_loss", ("encoder",)),),
    ),
    # NOTE [A numpy round trip on one line]: the hard rows picked from numpy copies of two tensors: both indexed in
    # torch with the same numpy index, in one fix (the line that computes the index keeps its .detach())
    "hard_negatives_selected_through_numpy": (
        "no_grad_fn",
        ("neg_h = torch.from_numpy(neg.detach().numpy()[hard])",),
        (("margin_loss", ("doc_tower", "query_tower")),),
    ),
    # NOTE [Terms of one loss reduced with numpy]: two terms, each np.mean over a list built on its line: both written
    # with torch in one fix (the first alone would fail again on the second)
    "deep_supervision_terms_np_mean": (
        "numpy_requires_grad",
        ("seg_term = np.mean([F.binary_cross_entropy_with_logits(o, masks) for o in outs])",),
        (("total", ("model",)),),
    ),
    # NOTE [A numpy round trip inside a helper]: the helper takes the tensors and does the round trip itself (a
    # group-by mean per station); its one caller turns the result back: the helper in torch, the conversion dropped
    "station_means_through_numpy_helper": (
        "no_grad_fn",
        ("means = torch.as_tensor(station_means(preds, station))",),
        (("station_loss", ("net",)),),
    ),
    # NOTE [numpy values that set a random draw]: a gate's keep probabilities converted to numpy only to draw a
    # hard mask with them: detached before .numpy() (the draw carries no gradient in any reading)
    # NOTE [A soft argmax]: positions decoded by a helper, the loss on them
    "beam_position_decoded_by_argmax": (
        "no_grad_fn",
        ("idx = torch.argmax(bins, dim=1).float()",),
        (("miss", ("scorer",)),),
    ),
    "feature_mask_drawn_from_gate": (
        "numpy_requires_grad",
        ("odds = keep.detach().numpy()",),
        (("fit", ("gate", "model")),),
    ),
    "bandit_env_pulls_numpy_of_probs": (
        "numpy_requires_grad",
        ("arm, reward = env.pull(np.asarray(probs, dtype=np.float64))",),
        (("surrogate", ("policy",)),),
    ),
    # NOTE [A list of losses kept for a plot]: numpy averages the kept penalties in a print written over two lines
    "penalty_history_mean_printed": (
        "numpy_requires_grad",
        ('f"mean penalty {np.mean(penalties):.5f}",',),
        (("total", ("model",)),),
    ),
    # NOTE [numpy inside a forward]: numpy's elementwise log inside a loss helper, on the model's rate: torch's log
    "count_nll_numpy_log": (
        "numpy_requires_grad",
        ("return (rate - counts * np.log(rate + 1e-6)).mean()",),
        (("nll", ("model",)),),
    ),
    # an activation module made with inplace=True, called on one of .chunk()'s views: the flag removed where it
    # is made (the call's line has no in-place method to rewrite)
    "chunk_gate_leaky_inplace_module": (
        "multi_view_in_place",
        ("value, gate = self.proj(x).chunk(2, dim=-1)", "return x + self.out(self.act(value) * torch.sigmoid(gate))"),
        (("loss", ("net",)),),
    ),
    # NOTE [A list copied by torch.tensor]: a comprehension of per-episode losses copied by torch.tensor(..., dtype=)
    "episode_returns_tensor_comprehension": (
        "no_grad_fn",
        ("per_episode = torch.tensor([episode_loss(model, ep) for ep in episodes], dtype=torch.float32)",),
        (("objective", ("model",)),),
    ),
    # NOTE [A loop that writes into the rows it iterates]: a loop over the views unbind(dim=2) makes, each masked in
    # place: each taken as scores.select(2, i), so the writes reach scores
    "frame_scores_unbind_masked": (
        "multi_view_in_place",
        ("for frame in scores.unbind(dim=2):", "frame[:, banned] = -30.0"),
        (("loss", ("scorer",)),),
    ),
    # NOTE [A loop that writes into the rows it iterates], nested: the batch's loop indexes the batch too, or the
    # inner write would reach a view of a view that cannot be written
    "gain_per_step_nested_loops": (
        "multi_view_in_place",
        ("for step, gain in zip(sequence, GAINS):", "step.mul_(gain)"),
        (("loss", ("encoder", "head")),),
    ),
    # NOTE [A loop that writes into the rows it iterates]: the rows taken with their index from enumerate(scores),
    # a padding mask written into each: row = scores[n] (the argument returned: into a copy)
    "lengths_mask_enumerate_rows": (
        "multi_view_in_place",
        ("for n, row in enumerate(scores):", "row[int(lengths[n]) :] = -1e4"),
        (("loss", ("head",)),),
    ),
    "stack_of_items": ("no_grad_fn", ("losses = torch.tensor([la, lb])",), (("total", ("model",)),)),
    # a helper holding the whole update, called by the training loop and under no_grad() by the validation (NOTE
    # [An update inside a helper evaluation calls too]): the update moved out to the training loop's call
    "shared_step_called_by_validation": ("no_grad_fn", ("with torch.no_grad():",), ()),
    # a list of loss tensors kept for a learning curve, converted by numpy in a helper (NOTE [A list of losses kept
    # for a plot]): detached where the loop appends
    "loss_curve_from_kept_tensors": ("numpy_requires_grad", ("curve = np.array(history, dtype=np.float32)",), ()),
    # a list of log-probabilities kept on the policy, copied by torch.tensor in a helper (NOTE [A list copied by
    # torch.tensor]): the tracker's record of the copy, stacked
    "rewards_weighted_log_probs_copied": (
        "no_grad_fn",
        ("logps = torch.tensor(policy.logps)",),
        (("objective", ("policy",)),),
    ),
    # forces (an energy's gradient) taken in an evaluation decorated with no_grad (NOTE [A derivative taken with
    # grad off]): the lines that compute what autograd.grad differentiates run under enable_grad()
    "forces_in_decorated_evaluation": ("no_grad_fn", ("dE = torch.autograd.grad(energy.sum(), pos)[0]",), ()),
    # a potential's forces (minus the energy's gradient, with positions it makes require grad) validated under a
    # caller's no_grad (NOTE [A derivative its caller runs with grad off]): the method decorated with enable_grad()
    "forces_validated_under_no_grad": (
        "no_grad_fn",
        ("(grad,) = torch.autograd.grad(energy.sum(), pos, create_graph=train)",),
        (("loss", ("model",)),),
    ),
    # a logging helper that reads a node's saved tensors after the step's backward (NOTE [Saved tensors read after
    # the backward]): retain_graph=True on that backward
    "saved_tensors_logged_after_backward": ("graph_freed", ("loss.backward()",), (("loss", ("model",)),)),
    # collocation points that require grad handed to a helper that only compares them with numpy (NOTE [A helper
    # that only compares with numpy]): the caller's argument detached
    "inflow_mask_numpy_helper": ("numpy_requires_grad", ("return np.less(points[:, 0], 0.1)",), (("loss", ("net",)),)),
    # a hinge summed over the pairs within the margin, from torch.zeros(1), on a batch with none (NOTE [A total
    # nothing was added to]): the update skipped when nothing was added
    "margin_terms_none_this_batch": ("no_grad_fn", ("hinge.backward()",), ()),
    # a loss module whose forward returns the loss of each pair, called by a trainer that logs loss.item(): reduced
    # in the module's return, so the logged loss is one number too
    "loss_module_returns_per_pair": ("non_scalar_output", ("loss.backward()",), (("loss", ("self.scorer",)),)),
    # NOTE [An input cut off by a detach]: a Fisher estimate's autograd.grad over every parameter, on features the
    # helper detached from the trunk: the detach dropped, on a path built through a list of parts
    "saliency_penalty_detached_trunk": (
        "unused_input",
        ("grads = torch.autograd.grad(mean_logp, list(net.parameters()))",),
        (("objective", ("net",)),),
    ),
    # NOTE [Parameters a forward does not use]: a look-ahead's autograd.grad over every parameter of a model with a
    # head its forward never calls: zeros for the head, so the virtual step reads its gradients as written
    # NOTE [An input computed anew in the call]: the gradient asked of log_t.exp() written again in the call:
    # differentiate by the leaf it is computed from
    "temperature_gradient_by_its_exp": (
        "unused_input",
        ("(g_t,) = torch.autograd.grad(nll, [log_t.exp()], retain_graph=True)",),
        (("nll", ("net",)),),
    ),
    # NOTE [Parameters a forward does not use]: the inner step differentiates by the values of a dict of the model's
    # named parameters, one of which the functional forward leaves out
    "inner_step_over_a_parameter_dict": (
        "unused_input",
        ("grads = torch.autograd.grad(inner, list(fast.values()), create_graph=True)",),
        (("outer", ("model",)),),
    ),
    # NOTE [An input computed anew in the call]: one input, a copy of the shared weight made in the call
    "gradnorm_by_a_copy_of_the_shared_weight": (
        "unused_input",
        ("g = torch.autograd.grad(weighted[i], trunk.weight.clone(), retain_graph=True, create_graph=True)[0]",),
        (),
    ),
    # NOTE [Copies loaded into a model]: the adapted weights "loaded" by a loop that rebinds its own variable
    # (farebox_maml_rebind_params, zzk)
    "adapted_weights_rebound_in_loop": (
        "unused_input",
        ("meta_grads = torch.autograd.grad(query, adapted)",),
        (),
    ),
    "lookahead_over_unused_head": (
        "unused_input",
        ("grads = torch.autograd.grad(weighted, model.parameters(), create_graph=True)",),
        (("meta", ("weigher",)),),
    ),
    # NOTE [An input made to require grad after the forward]: a derivative helper that turns requires_grad on for
    # its argument after the network ran on it: on where the caller draws it
    "pinn_time_derivative_requires_grad_late": (
        "unused_input",
        ("t = (4.0 * torch.rand(64, 1)).requires_grad_(True)",),
        (("loss", ("net",)),),
    ),
    # NOTE [A gradient taken without its graph]: a lazy input-gradient penalty backwarded on its own, the gradient
    # taken in a helper without create_graph=True
    "lazy_input_gradient_penalty": (
        "no_grad_fn",
        ("(g,) = torch.autograd.grad(out.logsumexp(1).sum(), [x], create_graph=True)",),
        (("ce", ("clf",)), ("penalty", ("clf",))),
    ),
    # NOTE [A model whose eval branch cuts]: a straight-through bottleneck put in eval mode to freeze its usage
    # statistics: its own switch turned off instead
    "gumbel_quantizer_put_in_eval": ("no_grad_fn", ("bottleneck.eval()",), (("mse", ("encoder",)),)),
    # NOTE [A sample drawn without its reparameterisation]: a policy's draws in a method the loss's path calls
    "pathwise_control_draws_with_sample": (
        "no_grad_fn",
        ("return Normal(mean, log_std.clamp(-3, 1).exp()).sample()",),
        (("distance", ("policy",)),),
    ),
    "no_grad_train": ("no_grad_fn", ("with torch.no_grad():",), (("loss", ("model",)),)),
    "decorated_step": ("no_grad_fn", ("@torch.no_grad()",), (("loss", ("encoder", "head")),)),
    "detach_in_forward": ("no_grad_fn", ("y = y.detach()",), (("loss", ("reg",)),)),
    "manual_sgd": ("leaf_in_place", ("weight -= 0.5 * weight.grad",), ()),
    # an activation and a dropout applied in place to a leaf the loop made for an input-gradient penalty: steps of
    # the forward, both made out of place (not the write put under no_grad)
    # NOTE [A parameter the forward fills from other parameters]: a rotation written entry by entry from a learnable
    # angle into a matrix declared as a parameter: a buffer, and the forward writes into a copy of it
    "rotation_filled_into_a_parameter": ("leaf_in_place", ("self.rot[0, 0] = c",), (("loss", ("align", "head")),)),
    # NOTE [A view of a leaf, written and then read]: each band's slice of a learned gain map scaled in place and
    # collected: out of place, not the write put under no_grad (which would scale the map itself at every forward)
    "gain_map_band_scaled_in_place": ("leaf_in_place", ("band *= exposure[b]",), ()),
    # a row of a parameter's weight moved toward another row in place, in a helper called between epochs (no forward
    # reads it after): an update, under no_grad, not the out-of-place copy (a module's parameter cannot be rebound
    # to it); the view torch names is the parameter's (wafer_neuron_edit_weight_slice, zzi)
    "prototype_rows_swapped_between_epochs": (
        "leaf_in_place",
        ("model.protos.weight[dst] += rate * toward",),
        (("loss", ("model",)),),
    ),
    # NOTE [Copies loaded into a model]: a helper copies the adapted weights into the parameters before the query
    # forward: the helper's call deleted, the forward run at the copies with torch.func.functional_call
    # (campaign_maml_copy_fast_weights, zzk)
    # (no claim: the first iteration fails inside the helper that computes meta, which no model call names)
    "fast_weights_copied_by_helper": ("leaf_in_place", ("p.copy_(w)",), ()),
    # NOTE [A parameter written in the forward]: a tied weight copied into a parameter in the forward (copy_) from
    # another module's parameter: the module run with that value in its place (questionnaire_tied_decoder_weight_copy,
    # zzm)
    "tied_embedding_copied_in_forward": (
        "leaf_in_place",
        ("self.proj.weight.copy_(self.emb.weight)",),
        (("nll", ("lm",)),),
    ),
    "saliency_input_rectified_in_place": ("leaf_in_place", ("x = F.relu(x, inplace=True)",), (("total", ("model",)),)),
    # NOTE [Every write to the split's views]: each axis of an unbind centred and scaled in place, axis by axis: every
    # augmented write to the views made out of place, not the refused one alone
    "gait_coordinates_centred_per_axis": ("multi_view_in_place", ("fwd -= start_f",), (("loss", ("encoder", "head")),)),
    # NOTE [Every write to the split's views]: each chunk squashed by its own in-place method: both made out of place
    "gate_chunks_squashed_in_place": ("multi_view_in_place", ("logits.tanh_()",), (("nll", ("net",)),)),
    "init_views": ("multi_view_in_place", ("gates = self.lstm.bias_ih_l0.chunk(4)", "gates[1].fill_(1.0)"), ()),
    "inference_cache": ("inference_saved", ("with torch.inference_mode():",), (("loss", ("probe",)),)),
    # NOTE [Every loss the loop logs with numpy]: each term and the total logged with .numpy(): all detached, not the
    # first one alone (facade_loss_plot_numpy, zzj: a plot per scale and a total per network)
    "terms_logged_with_numpy": (
        "numpy_requires_grad",
        ('history["data"].append(float(np.mean(data.numpy())))',),
        (("total", ("net",)),),
    ),
    "numpy_log": ("numpy_requires_grad", ("means.append(float(np.mean(pred.numpy())))",), ()),
    # reduced where it is made: per_sample is then the one number the loop backwards
    # NOTE [A per-element loss times weights]: each pixel's error times the sensor's confidence, backwarded as it is:
    # the weighted mean, as torch's losses reduce with weight= (donor_weighted_response_loss_unreduced, zzm)
    "per_pixel_loss_times_confidence": ("non_scalar_output", ("loss.backward()",), (("loss", ("net",)),)),
    "per_sample_loss": ("non_scalar_output", ("per_sample.backward()",), (("per_sample", ("net",)),)),
    "lbfgs_closure": ("graph_freed", ("err.backward()",), (("err", ("curve",)),)),
    "stale_chain": ("graph_freed", ("nll.backward()",), ()),
    # numpy converts the tensors of a list it is given: each element detached in the comprehension
    # an in-place call on one of .chunk()'s views, used as a value: its out-of-place twin in place of it
    "policy_chunk_squashed_as_value": (
        "multi_view_in_place",
        (
            "mu, log_sigma = self.net(obs).chunk(2, dim=-1)",
            "return torch.distributions.Normal(mu, log_sigma.tanh_().exp())",
        ),
        (),
    ),
    # adapters checkpointed with the reentrant implementation on a frozen encoder's features: use_reentrant=False
    # (NOTE [A reentrant checkpoint on inputs without grad])
    "adapters_checkpointed_on_frozen_features": (
        "no_grad_fn",
        ("mse.backward()",),
        (("mse", ("adapted",)),),
    ),
    "numpy_list_sum": ("numpy_requires_grad", ("mean = np.sum([w * x for w, x in zip([1, 1, 1], losses)]) / 3",), ()),
    # a luminance helper written for arrays goes to numpy and back with torch.as_tensor, its result in the loss (NOTE
    # [A numpy round trip]): the same statements on the tensor, the numpy constant a tensor of its dtype
    "luminance_through_numpy": (
        "numpy_requires_grad",
        ("pix = img.permute(0, 2, 3, 1).numpy()",),
        (("loss", ("net",)),),
    ),
    # numpy pools a module's tensors in its forward: torch's own mean of the stacked list, on the graph (NOTE
    # [numpy inside a forward]); detaching would stop the projections from training
    "numpy_pool_in_forward": (
        "numpy_requires_grad",
        ("pooled = numpy.mean(per_scale, axis=0)",),
        (("err", ("encoder",)),),
    ),
    # a step decorated with @torch.no_grad() calls the closure: @torch.enable_grad() on the closure
    "closure_no_grad_step": ("no_grad_fn", ("loss.backward()",), ()),
    # a term without its reduction returned by a helper: reduced in the helper's return, as the log reads it too
    # a mask reduced before it weighs the error (NOTE [A reduction on a factor]): the mean of the whole product
    "masked_error_mask_reduced": (
        "non_scalar_output",
        ("objective.backward()",),
        (("objective", ("net",)),),
    ),
    # enable_grad() inside a validation context that is inference mode (NOTE [Inference mode under enable_grad]):
    # no_grad where the context is bound
    "validation_slope_under_inference": (
        "no_grad_fn",
        ("guard = torch.inference_mode() if fast_eval else torch.no_grad()",),
        (("mse", ("field",)),),
    ),
    # a leaf the loop made (no parameter) shifted in place by a trained network's output: a step of the
    # computation, made out of place (NOTE [Writes to a leaf])
    "perturbed_input_leaf_shifted": (
        "leaf_in_place",
        ("batch += 0.1 * torch.tanh(shift_net(context))",),
        (("loss", ("clf", "shift_net")),),
    ),
    # a view of a split's output (squeezed) written in place once the split's outputs are gone: found by the
    # views' base, made out of place
    # a learned initial state split per layer in a forward, each part squeezed in place on its own line: both lines
    # out of place (a forward's write is no initialisation: no torch.no_grad())
    "stacked_cells_initial_state_split": (
        "multi_view_in_place",
        ("low, high = self.start.split(1, dim=0)", "low = low.squeeze_(0).expand(seq.shape[1], -1)"),
        (("loss", ("net",)),),
    ),
    # weights swapped for an evaluation and back, each swap a loop of copy_() into the parameters: both under
    # torch.no_grad()
    "swa_weights_swapped_for_eval": ("leaf_in_place", ("q.copy_(average[q])",), (("loss", ("model",)),)),
    # a transform's loop writes into the channels of a sample the caller got by iterating a batch: the sample is
    # copied, then indexed (NOTE [A loop that writes into the rows it iterates])
    "per_channel_scale_of_iterated_sample": (
        "multi_view_in_place",
        ("plane.mul_(g)",),
        (("loss", ("head", "stage")),),
    ),
    "heads_split_then_scaled": ("multi_view_in_place", ("first *= 2.0",), (("loss", ("attn", "head")),)),
    "kl_term_unreduced": ("non_scalar_output", ("loss.backward()",), ()),
    # a conv with a full backward hook, its activation built with inplace=True in a helper (NOTE [A custom
    # Function's view written in place]): every inplace=True of that activation removed
    "hooked_conv_block_inplace_activation": (
        "custom_view_in_place",
        ("return noisy - self.out(self.body(noisy))",),
        (("err", ("net",)),),
    ),
    # a helper iterates over a batch tensor (iterating unbinds it) to clip each row in place and returns the batch
    # (NOTE [A loop that writes into the rows it iterates]): each row indexed, so the writes reach the batch
    "rows_clipped_while_iterating": (
        "multi_view_in_place",
        ("row.clamp_(-limits, limits)",),
        (("err", ("head",)),),
    ),
    # a custom Function returning its input's view, shifted in place by the caller: the out-of-place form
    "custom_function_view_shifted_in_place": ("custom_view_in_place", ("code += 0.5",), (("rec", ("dec", "enc")),)),
    # the other term's reduction is a sum divided by the batch size (a mean written out): the mean, not the sum
    "per_item_error_beside_written_out_mean": (
        "non_scalar_output",
        ("total.backward()",),
        (("total", ("conf_head", "trunk", "value_head")),),
    ),
    # inference_mode around a layer whose weights the optimizer holds: the block goes, not into no_grad
    "inference_forward_trained": ("inference_saved", ("with torch.inference_mode():",), ()),
    # autograd.grad of a field with one value per point: grad_outputs=ones_like (the derivative of its sum)
    "grad_of_field": ("non_scalar_output", ("du = torch.autograd.grad(u, x, create_graph=True)[0]",), ()),
    # an in-place exp_() whose result is only read: its out-of-place twin
    # a parameter written, each iteration, with what a trained hypernetwork computes (NOTE [A parameter written in
    # the forward]): written into a copy, the head run with it by torch.func.functional_call
    "hyper_bias_written_into_head": (
        "leaf_in_place",
        ("head.bias[:] = hyper(task_embed(torch.tensor(task)))",),
        (("loss", ("features", "head", "hyper", "task_embed")),),
    ),
    "leaf_exp_in_expression": ("leaf_in_place", ("return self.lin(x) / self.log_scale.exp_()",), ()),
    # a helper writes in place to one part of a model's stacked output the loop iterates over: the write out of
    # place keeps the training, and says what the loop's loss trains (read through the loop over the parts)
    "stage_outputs_scaled": (
        "multi_view_in_place",
        ("pred *= weight", "for pred in net(inputs):"),
        (("total", ("net",)),),
    ),
    # NOTE [numpy values that feed the loss]: a numpy helper ranks the bank for each anchor, the loss reads the bank's
    # rows at those positions: values read only as positions carry no gradient, the .detach() is the fix
    "hard_negatives_ranked_in_numpy": (
        "numpy_requires_grad",
        ("sims = anchors.numpy() @ bank.T",),
        (("loss", ("embed",)),),
    ),
    # the code's loss is nn.CrossEntropyLoss() (mean by default); w / w.sum() normalises, it is no loss: the mean
    "hinge_term_beside_default_mean_criterion": (
        "non_scalar_output",
        ("hinge.backward()",),
        (("hinge", ("model",)),),
    ),
    # NOTE [A copy two calls deep]: a model's forward returns its loss method's value, which copies the scores with
    # torch.tensor(..., dtype=...): kept on the graph with .to(dtype=...), inside a training function
    "pairwise_scores_copied_in_loss_method": (
        "no_grad_fn",
        ("good = torch.tensor(good, dtype=torch.float32)",),
        (("loss", ("ranker",)),),
    ),
}


def _error(script: str) -> BaseException:
    path = KINDS / f"{script}.py"
    error, _ = _run(path.read_text(), str(path))
    assert error is not None, f"{script} should fail"
    return error


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_every_kind_is_diagnosed_and_located(script: str) -> None:
    error = _error(script)
    d = gradlab.last_diagnosis(error)
    kind, quoted, _ = EXPECTED[script]
    assert d.kind == kind, str(d)
    note = "\n".join(getattr(error, "__notes__", []))
    assert note.count("gradlab: error[") == 1, note  # one note, the diagnosis's
    for line in quoted:
        assert line in note, f"{script}: the note should quote {line!r}\n{note}"


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_the_first_fix_applied_as_printed_trains_what_the_intended_version_trains(script: str) -> None:
    path = KINDS / f"{script}.py"
    fix = gradlab.last_diagnosis(_error(script)).fixes[0]
    assert fix.edits, f"{script}: the first fix should be checked code\n{fix.lines()}"
    assert fix.code == "\n".join(textwrap.dedent(e.text) for e in fix.edits if e.text)  # printed is applied
    patched = apply_edits(path.read_text(), fix.edits)
    error, steps = _run(patched, str(path.with_name(f"{script}_patched.py")))
    assert error is None, f"{script}: the patched script fails: {error}"
    intended = KINDS / f"{script}_intended.py"
    _, want = _run(intended.read_text(), str(intended))
    assert steps and _same(steps, want), f"{script}: the gradients of the optimizer steps differ from the intended ones"
    claims = EXPECTED[script][2]
    if claims:
        assert dict(fix.claims) == dict(claims), fix.claims


def test_a_fix_that_guesses_the_reading_is_not_machine_applicable() -> None:
    """A non-scalar loss: its mean or its sum scale the step differently; neither is applied without the user's word."""
    fixes = gradlab.last_diagnosis(_error("per_sample_loss")).fixes
    made, mean, total = fixes[0], fixes[1], fixes[2]
    assert "where it is computed" in made.summary and "mean" in mean.summary and "sum" in total.summary
    assert made.applicability == mean.applicability == total.applicability == "maybe-incorrect"
    # nothing in the code says mean or sum: the first fix says it takes one by default
    assert "no other term says which" in made.summary
    assert total.lines(first=False)[0].startswith("or ")  # an alternative, worded as one after the first


def test_numpy_values_that_feed_the_loss_are_not_detached() -> None:
    """NOTE [numpy values that feed the loss]: a helper converts the model's output with numpy and the loss reads what
    it returns: a .detach() would hand the loss numbers without a graph (and a numpy array). The first fix says to
    compute them with torch ops, and no fix prints a .detach() as code; a metric converted after the backward
    (numpy_log) still gets its .detach() first."""
    error = _error("denormalize_with_numpy_before_loss")
    d = gradlab.last_diagnosis(error)
    assert d.kind == "numpy_requires_grad"
    assert "arr = np.asarray(values)" in "\n".join(getattr(error, "__notes__", []))
    assert "torch ops" in d.fixes[0].summary and not d.fixes[0].edits
    assert not any(".detach()" in e.text for fix in d.fixes for e in fix.edits)
    metric = gradlab.last_diagnosis(_error("numpy_log")).fixes[0]
    assert metric.edits and ".detach()" in metric.edits[0].text


def test_a_numpy_round_trip_with_a_numpy_function_on_the_way_is_not_rewritten(tmp_path: Path) -> None:
    """NOTE [A numpy round trip]: np.clip on the way has no rewrite here; the torch-ops sentence stays first."""
    source = (KINDS / "luminance_through_numpy.py").read_text()
    assert "    y = pix @ LUMA\n" in source
    copy = tmp_path / "luminance_clipped.py"
    copy.write_text(source.replace("    y = pix @ LUMA\n", "    y = np.clip(pix @ LUMA, 0.0, 1.0)\n"))
    error, _ = _run(copy.read_text(), str(copy))
    assert error is not None
    fixes = gradlab.last_diagnosis(error).fixes
    assert "torch ops" in fixes[0].summary and not fixes[0].edits
    assert not any("as_tensor(LUMA" in e.text for fix in fixes for e in fix.edits)


def test_a_parameter_written_from_itself_in_the_forward_is_not_made_a_buffer(tmp_path: Path) -> None:
    """NOTE [A parameter the forward fills from other parameters]: an entry scaled from the parameter's own value is an
    update by hand, not a structure the forward builds: no buffer is offered."""
    d = variant_diagnosis(
        KINDS / "rotation_filled_into_a_parameter.py",
        tmp_path / "rotation_damped_by_hand.py",
        ("        self.rot[0, 0] = c\n", "        self.rot[0, 0] = self.rot[0, 0] * c\n"),
    )
    assert d is not None and d.fixes, str(d)
    assert not any("register_buffer" in e.text for f in d.fixes for e in f.edits), str(d)


def test_a_derivative_of_an_input_that_requires_no_grad_with_grad_on_is_not_given_enable_grad(tmp_path: Path) -> None:
    # the evaluation not decorated but freezing the potential: grad is on where the derivative is taken, and
    # enable_grad() would change nothing
    d = variant_diagnosis(
        KINDS / "forces_in_decorated_evaluation.py",
        tmp_path / "forces_of_a_frozen_potential.py",
        (
            "@torch.no_grad()\ndef force_error(potential, pos, true_forces):\n",
            "def force_error(potential, pos, true_forces):\n    potential.requires_grad_(False)\n",
        ),
    )
    assert d is not None and not any("enable_grad" in e.text for f in d.fixes for e in f.edits), str(d)


def test_a_total_whose_terms_were_cut_is_not_skipped(tmp_path: Path) -> None:
    # the terms are added as numbers (.item()): the total is not empty, the cut is the problem
    d = variant_diagnosis(
        KINDS / "margin_terms_none_this_batch.py",
        tmp_path / "margin_terms_as_numbers.py",
        ("                hinge += margin - d\n", "                hinge += (margin - d).item()\n"),
    )
    assert d is not None and not any("continue" in e.text for f in d.fixes for e in f.edits), str(d)


def test_a_kind_without_a_located_fix_still_gets_a_diagnosis_at_its_line() -> None:
    with gradlab.track() as t:
        try:
            torch_ones = __import__("torch").ones
            torch_ones(2, requires_grad=True).register_hook(lambda g: g)
            torch_ones(2).register_hook(lambda g: g)  # no grad: torch refuses the hook
        except RuntimeError as e:
            d = t.diagnosis_for(e)
    assert d is not None and d.kind == "hook_no_grad"
    assert "torch_ones(2).register_hook(lambda g: g)" in str(d) and d.fixes


def test_an_error_that_is_not_autograd_gets_no_diagnosis() -> None:
    with gradlab.track() as t:
        try:
            raise RuntimeError("CUDA out of memory")
        except RuntimeError as e:
            assert t.diagnosis_for(e) is None
            assert not getattr(e, "__notes__", [])


def test_a_locator_that_fails_leaves_the_message_explained_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # NOTE [Every kind diagnosed]: a bug while reading the user's lines gives the message's own explanation and a
    # warning, never no diagnosis
    import gradlab.kinds as kinds

    def broken(failure: object) -> object:
        raise IndexError("a locator's bug")

    monkeypatch.setitem(kinds._LOCATORS, "numpy_requires_grad", broken)
    with pytest.warns(gradlab.GradlabWarning, match="could not read the lines"):
        error = _error("numpy_log")
    d = gradlab.last_diagnosis(error)
    assert d is not None and d.kind == "numpy_requires_grad"
    assert d.fixes and not any(f.edits for f in d.fixes)


def test_a_model_in_eval_mode_without_a_switch_of_its_own_is_put_back_in_training_mode(tmp_path: Path) -> None:
    # NOTE [A model whose eval branch cuts]: with no switch of its own on (track_usage off), the fix is .train(),
    # and it says what training mode runs besides: not applied without the user's word
    d = variant_diagnosis(
        KINDS / "gumbel_quantizer_put_in_eval.py",
        tmp_path / "bottleneck_without_switch.py",
        ("track_usage=True):", "track_usage=False):"),
    )
    fix = d.fixes[0]
    assert [e.text for e in fix.edits] == ["bottleneck.train()"], fix.lines()
    assert fix.applicability == "maybe-incorrect" and "runs again" in str(fix.trains)


def test_positions_on_the_loss_path_are_the_cut_and_a_constructor_is_not() -> None:
    """NOTE [Positions on the loss's path], NOTE [Initialisation is not a cut]: the loss compares argmax positions
    with targets; the note points at the argmax in the helper, not at nn.Conv2d's initialisation under no_grad."""
    error = _error("corners_from_peak_positions")
    d = gradlab.last_diagnosis(error)
    note = "\n".join(getattr(error, "__notes__", []))
    assert d.kind == "no_grad_fn", str(d)
    assert "flat = maps.flatten(2).argmax(dim=-1)" in note and "gives positions" in note, note
    assert "nn.Conv2d" not in note and "no_grad() here" not in note, note
    first = d.fixes[0]
    assert "soft-argmax" in first.summary and not first.edits and first.applicability == "sentence", str(first)
    cut = d.located.cut_at if d.located is not None else None
    assert cut is not None and cut.lineno == 24, cut


@pytest.mark.parametrize(
    "statement, call",
    [
        ("idx = s.argmax(-1)", "s.argmax()"),
        ("_, idx = torch.max(s, dim=-1)", "torch.max()"),
        ("idx = s.topk(3).indices", "s.topk()"),
        ("idx = s.sort(dim=0)[1]", "s.sort()"),
        ("v = s.max()", None),
        ("v = torch.max(s, dim=1)[0]", None),
        ("a, b = s.argmax(0), 1", None),
    ],
)
def test_positions_are_told_from_values(statement: str, call: str | None) -> None:
    import ast

    from gradlab.kinds.cut_path import positions_call

    assert positions_call(ast.parse(statement).body[0]) == call


def test_positions_that_look_up_embeddings_are_no_cut_and_the_eval_branch_is(tmp_path: Path) -> None:
    """NOTE [Positions on the loss's path]: F.embedding(idx, codebook) picks rows, as codebook[idx] does; the model's
    eval branch is what cut the graph (NOTE [A model whose eval branch cuts])."""
    d = variant_diagnosis(
        KINDS / "gumbel_quantizer_put_in_eval.py",
        tmp_path / "quantizer_embedding_lookup_in_eval.py",
        ("        hard = self.codebook[idx]\n", "        hard = F.embedding(idx, self.codebook)\n"),
    )
    assert d is not None and "training mode" in str(d.fixes[0].summary), str(d)
    assert not any("soft-argmax" in str(f.summary) for f in d.fixes), str(d)


def test_a_numpy_helper_with_a_function_torch_lacks_or_a_second_caller_is_not_rewritten(tmp_path: Path) -> None:
    """NOTE [A numpy round trip through a helper]: np.sign has no entry in the table, and a helper also called on
    arrays elsewhere must keep working on arrays: neither is written with torch."""
    script = KINDS / "denoiser_codes_decoded_in_numpy.py"
    for name, change in (
        ("unknown", ("np.tanh(codes @ DICTIONARY)", "np.sign(codes @ DICTIONARY)")),
        (
            "second_caller",
            (
                "clean = torch.randn(128, 32)\n",
                "clean = torch.randn(128, 32)\nprobe = decode_codes(np.ones((1, 16)))\n",
            ),
        ),
    ):
        d = variant_diagnosis(script, tmp_path / f"denoiser_{name}.py", change)
        assert d is not None and d.kind == "no_grad_fn", name
        assert not any("decode_codes() with torch" in str(f.summary) for f in d.fixes), (name, str(d))
