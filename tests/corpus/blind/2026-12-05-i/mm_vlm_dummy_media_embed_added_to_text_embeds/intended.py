"""Vision-language model (VILA/LLaVA layout): projector alignment with a frozen language model.

Source: https://github.com/NVlabs/VILA/pull/199

The author trains a VILA-style model: a vision tower, an ``mm_projector`` and a decoder-only language
model. In this stage only the projector trains (vision tower and language model frozen), with
gradient checkpointing on, so the language model's input embeddings are made to require grad
(``enable_input_require_grads``, as the Hugging Face trainer does). Batches are either image-text
pairs or text-only; for text-only batches the model encodes a dummy image and adds ``0 * sum`` of
its embedding to the text embeddings so that the projector is still part of the graph (as VILA's
``_embed`` does). One AdamW holds the trainable parameters.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)

VOCAB, HIDDEN, VISION_DIM, N_PATCHES = 50, 32, 24, 4
MEDIA_TOKEN, IGNORE_INDEX = VOCAB - 1, -100


class VisionTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, VISION_DIM, kernel_size=8, stride=8)
        self.norm = nn.LayerNorm(VISION_DIM)

    def forward(self, images):
        return self.norm(self.patch_embed(images).flatten(2).transpose(1, 2))


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(HIDDEN)
        self.mlp = nn.Sequential(nn.Linear(HIDDEN, 2 * HIDDEN), nn.GELU(), nn.Linear(2 * HIDDEN, HIDDEN))

    def forward(self, h):
        return h + self.mlp(self.norm(h))


class TinyLlama(nn.Module):
    def __init__(self, num_layers=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, HIDDEN)
        self.layers = nn.ModuleList([DecoderLayer() for _ in range(num_layers)])
        self.norm = nn.LayerNorm(HIDDEN)
        self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)
        self.gradient_checkpointing = False

    def enable_input_require_grads(self):
        def make_inputs_require_grads(module, input, output):
            output.requires_grad_(True)

        self._require_grads_hook = self.embed_tokens.register_forward_hook(make_inputs_require_grads)

    def forward(self, inputs_embeds):
        h = inputs_embeds
        for layer in self.layers:
            h = checkpoint(layer, h, use_reentrant=True) if self.gradient_checkpointing else layer(h)
        return self.lm_head(self.norm(h))


class VILAModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.vision_tower = VisionTower()
        self.mm_projector = nn.Sequential(nn.Linear(VISION_DIM, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, HIDDEN))
        self.llm = TinyLlama()

    def encode_images(self, images):
        return self.mm_projector(self.vision_tower(images))

    def _embed(self, input_ids, images, labels):
        media_mask = input_ids == MEDIA_TOKEN
        text_embeds = self.llm.embed_tokens(input_ids.masked_fill(media_mask, 0))
        if images is None:
            # text-only batch: keep the projector in the graph with a dummy image
            dummy_embed = self.encode_images(torch.zeros(1, 3, 16, 16))
            text_embeds = text_embeds + torch.sum(dummy_embed) * 0
            return text_embeds, labels
        media_embeds = self.encode_images(images)
        inputs, new_labels = [], []
        for k in range(input_ids.shape[0]):
            pos = int(media_mask[k].nonzero()[0])
            inputs.append(torch.cat([text_embeds[k, :pos], media_embeds[k], text_embeds[k, pos + 1 :]]))
            media_labels = torch.full((N_PATCHES,), IGNORE_INDEX, dtype=labels.dtype)
            new_labels.append(torch.cat([labels[k, :pos], media_labels, labels[k, pos + 1 :]]))
        return torch.stack(inputs), torch.stack(new_labels)

    def forward(self, input_ids, labels, images=None):
        inputs_embeds, labels = self._embed(input_ids, images, labels)
        logits = self.llm(inputs_embeds)
        return F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), labels[:, 1:].reshape(-1),
                               ignore_index=IGNORE_INDEX)


def make_batch(with_images, batch_size=4, seq_len=10):
    input_ids = torch.randint(1, MEDIA_TOKEN, (batch_size, seq_len))
    images = None
    if with_images:
        input_ids[:, 1] = MEDIA_TOKEN
        images = torch.randn(batch_size, 3, 16, 16)
    labels = input_ids.masked_fill(input_ids == MEDIA_TOKEN, IGNORE_INDEX)
    return input_ids, labels, images


training_args = {"tune_vision_tower": False, "tune_mm_projector": True, "tune_language_model": False,
                 "gradient_checkpointing": True, "learning_rate": 2e-4}

model = VILAModel()
model.vision_tower.requires_grad_(training_args["tune_vision_tower"])
model.mm_projector.requires_grad_(training_args["tune_mm_projector"])
model.llm.requires_grad_(training_args["tune_language_model"])
if training_args["gradient_checkpointing"]:
    model.llm.gradient_checkpointing = True
    model.llm.enable_input_require_grads()

optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=training_args["learning_rate"])

batches = [make_batch(with_images=(step % 2 == 0)) for step in range(6)]
for step, (input_ids, labels, images) in enumerate(batches):
    loss = model(input_ids, labels, images)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
