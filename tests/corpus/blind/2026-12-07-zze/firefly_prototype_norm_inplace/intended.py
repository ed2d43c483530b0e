"""Firefly flash-signal detection: match flash-train embeddings against learned species prompts.

Source: https://github.com/caoyunkang/AdaCLIP/issues/2 ("cause error when try to train").
Training AdaCLIP (CLIP with learnable prompts, scoring image features against normalised
text-prompt features) fails with "one of the variables needed for gradient computation has
been modified by an inplace operation: [torch.cuda.HalfTensor [1, 768]], which is output 0
of DivBackward0"; the maintainer points at the torch version, and a later pull request of
that repository (#46) replaced in-place operations by out-of-place ones. The writer's
reduction: a prompt learner whose per-species prompt features are divided by their norm
(the DivBackward0 output), used for the global similarity logits, and then scaled in place
by the learned temperature before the per-frame (local) similarity reuses them. Flash
trains (intensity traces of photinus-like flash patterns) are synthetic.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SETTINGS = {"n_species": 5, "trace_len": 48, "frames": 6, "embed": 32, "ctx_tokens": 4, "batch": 12, "steps": 8, "lr": 1e-3}


class FlashEncoder(nn.Module):
    def __init__(self, trace_len, frames, embed):
        super().__init__()
        self.frames = frames
        self.frame_proj = nn.Linear(trace_len // frames, embed)
        self.mix = nn.Sequential(nn.LayerNorm(embed), nn.Linear(embed, embed), nn.GELU())

    def forward(self, trace):
        chunks = trace.view(trace.shape[0], self.frames, -1)
        tokens = self.mix(self.frame_proj(chunks))
        return tokens.mean(dim=1), tokens


class SpeciesPromptLearner(nn.Module):
    def __init__(self, n_species, ctx_tokens, embed):
        super().__init__()
        self.ctx = nn.Parameter(torch.randn(ctx_tokens, embed) * 0.02)
        self.class_tokens = nn.Parameter(torch.randn(n_species, embed) * 0.02)
        self.text_proj = nn.Linear(embed, embed)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def forward(self):
        prompts = self.class_tokens + self.ctx.mean(dim=0, keepdim=True)
        return self.text_proj(prompts)


def detection_logits(encoder, prompt_learner, traces):
    global_feat, frame_feats = encoder(traces)
    global_feat = global_feat / global_feat.norm(dim=-1, keepdim=True)
    frame_feats = frame_feats / frame_feats.norm(dim=-1, keepdim=True)
    text_features = prompt_learner()
    text_features = text_features / text_features.norm(dim=-1, keepdim=True)
    global_logits = global_feat @ text_features.t()
    scaled_text = text_features * prompt_learner.logit_scale.exp()
    local_logits = frame_feats @ scaled_text.t()
    return global_logits * 10.0, local_logits


def synth_traces(cfg):
    n = cfg["batch"] * cfg["steps"]
    species = torch.randint(0, cfg["n_species"], (n,))
    t = torch.linspace(0, 1, cfg["trace_len"])
    period = 2.0 + species.float().unsqueeze(1)
    traces = torch.relu(torch.sin(2 * math.pi * period * t)) + 0.2 * torch.randn(n, cfg["trace_len"])
    frame_labels = species.unsqueeze(1).expand(n, cfg["frames"])
    return traces, species, frame_labels


def main():
    torch.manual_seed(3)
    encoder = FlashEncoder(SETTINGS["trace_len"], SETTINGS["frames"], SETTINGS["embed"])
    prompt_learner = SpeciesPromptLearner(SETTINGS["n_species"], SETTINGS["ctx_tokens"], SETTINGS["embed"])
    traces, species, frame_labels = synth_traces(SETTINGS)
    trainable = list(encoder.parameters()) + list(prompt_learner.parameters())
    prompt_opt = torch.optim.Adam(trainable, lr=SETTINGS["lr"])
    b = SETTINGS["batch"]
    for step in range(SETTINGS["steps"]):
        sl = slice(step * b, (step + 1) * b)
        global_logits, local_logits = detection_logits(encoder, prompt_learner, traces[sl])
        loss_global = F.cross_entropy(global_logits, species[sl])
        loss_local = F.cross_entropy(local_logits.flatten(0, 1), frame_labels[sl].flatten())
        prompt_loss = loss_global + loss_local
        prompt_opt.zero_grad()
        prompt_loss.backward()
        prompt_opt.step()
        if step % 4 == 0:
            print(f"step {step}: global {loss_global.item():.4f} local {loss_local.item():.4f}")


if __name__ == "__main__":
    main()
