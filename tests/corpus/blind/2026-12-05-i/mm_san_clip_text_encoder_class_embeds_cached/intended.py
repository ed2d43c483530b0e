"""Open-vocabulary semantic segmentation (SAN-style, mmsegmentation layout) with the CLIP text encoder unfrozen.

Source: https://github.com/open-mmlab/mmsegmentation/issues/3577

The author trains the SAN segmentor of mmsegmentation: a CLIP text encoder turns the dataset's class
names, through several prompt templates, into class embeddings; an image backbone and a decode head
produce per-pixel embeddings that are matched against them. The author wants the text encoder's
parameters to take part in training, so they removed the encoder's ``_freeze()`` call and the
``@torch.no_grad()`` on ``encode_text``; the rest of the config (``cache_feature=True``) is as shipped.
One AdamW holds the whole segmentor (the text encoder at a tenth of the learning rate).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

CLASS_NAMES = {"toy_city": ["road", "building", "sky", "tree", "car"]}
TEMPLATES = ["a photo of a {}.", "a bad photo of the {}.", "there is a {} in the scene."]
CONTEXT_LENGTH = 8


class Tokenizer:
    """A word-level stand-in for CLIP's BPE tokenizer: sot, words, eot (the highest id), padding."""

    def __init__(self, texts):
        words = sorted({w for t in texts for w in t.replace(".", " .").split()})
        self.sot, self.eot = 1, len(words) + 2
        self.ids = {w: i + 2 for i, w in enumerate(words)}
        self.vocab_size = self.eot + 1

    def tokenize(self, texts):
        out = torch.zeros(len(texts), CONTEXT_LENGTH, dtype=torch.long)
        for row, text in enumerate(texts):
            ids = [self.sot] + [self.ids[w] for w in text.replace(".", " .").split()] + [self.eot]
            out[row, : len(ids)] = torch.tensor(ids[:CONTEXT_LENGTH])
        return out


ALL_PROMPTS = [t.format(c) for names in CLASS_NAMES.values() for c in names for t in TEMPLATES]
tokenizer = Tokenizer(ALL_PROMPTS)


class CLIPTextEncoder(nn.Module):
    def __init__(self, dataset_name, embed_dims=32, num_layers=2, num_heads=4, output_dims=16,
                 cache_feature=True, cat_bg=True):
        super().__init__()
        self.dataset_name = dataset_name
        self.token_embedding = nn.Embedding(tokenizer.vocab_size, embed_dims)
        self.positional_embedding = nn.Parameter(torch.randn(CONTEXT_LENGTH, embed_dims) * 0.01)
        layer = nn.TransformerEncoderLayer(embed_dims, num_heads, 4 * embed_dims, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.transformer = nn.TransformerEncoder(layer, num_layers)
        self.ln_final = nn.LayerNorm(embed_dims)
        self.text_projection = nn.Parameter(torch.randn(embed_dims, output_dims) * embed_dims ** -0.5)
        self.logit_scale = nn.Parameter(torch.ones([]) * 2.0)
        self.register_buffer("attn_mask", torch.full((CONTEXT_LENGTH, CONTEXT_LENGTH), float("-inf")).triu_(1))
        self.cache_feature = cache_feature
        if self.cache_feature:
            self.cache = {}
        self.cat_bg = cat_bg
        if self.cat_bg:
            self.bg_embed = nn.Parameter(torch.randn(1, output_dims) * output_dims ** -0.5)

    def encode_text(self, text, normalize=False):
        x = self.token_embedding(text) + self.positional_embedding
        x = self.transformer(x, mask=self.attn_mask)
        x = self.ln_final(x)
        x = x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection
        return F.normalize(x, dim=-1) if normalize else x

    def template_encode(self, vocabulary):
        text_embed_bucket = []
        for template in TEMPLATES:
            text_inputs = tokenizer.tokenize([template.format(noun) for noun in vocabulary])
            text_embed_bucket.append(self.encode_text(text_inputs, normalize=True))
        text_embed = torch.stack(text_embed_bucket).mean(dim=0)
        return text_embed / text_embed.norm(dim=-1, keepdim=True)

    def forward(self):
        class_names = CLASS_NAMES[self.dataset_name]
        if self.cache_feature:
            if self.dataset_name not in self.cache:
                class_embeds = self.template_encode(class_names)
                self.cache[self.dataset_name] = class_embeds
            else:
                class_embeds = self.cache[self.dataset_name]
        else:
            class_embeds = self.template_encode(class_names)
        if self.cat_bg:
            class_embeds = torch.cat([class_embeds, self.bg_embed])
            class_embeds = F.normalize(class_embeds, p=2, dim=-1)
        return self.logit_scale.exp() * class_embeds


class Backbone(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU())
        self.stage = nn.Sequential(nn.Conv2d(width, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU())

    def forward(self, x):
        return self.stage(self.stem(x))


class SideAdapterHead(nn.Module):
    def __init__(self, in_channels=16, embed_dims=16):
        super().__init__()
        self.proj = nn.Conv2d(in_channels, embed_dims, 1)

    def forward(self, feats, class_embeds):
        pixel_embeds = F.normalize(self.proj(feats), dim=1)
        return torch.einsum("bchw,kc->bkhw", pixel_embeds, class_embeds)


class SANSegmentor(nn.Module):
    def __init__(self, text_encoder_cfg):
        super().__init__()
        self.backbone = Backbone()
        self.decode_head = SideAdapterHead()
        self.text_encoder = CLIPTextEncoder(**text_encoder_cfg)

    def forward(self, images):
        class_embeds = self.text_encoder()
        return self.decode_head(self.backbone(images), class_embeds)


model_cfg = dict(text_encoder=dict(dataset_name="toy_city", cache_feature=False, cat_bg=True))
segmentor = SANSegmentor(model_cfg["text_encoder"])

base_lr = 1e-3
text_params = list(segmentor.text_encoder.parameters())
text_ids = {id(p) for p in text_params}
optimizer = torch.optim.AdamW(
    [
        {"params": [p for p in segmentor.parameters() if id(p) not in text_ids]},
        {"params": text_params, "lr": base_lr * 0.1},
    ],
    lr=base_lr,
    weight_decay=0.01,
)

images = torch.randn(8, 3, 16, 16)
seg_maps = torch.randint(0, 6, (8, 16, 16))


def train_step(batch_images, batch_labels):
    seg_logits = segmentor(batch_images)
    loss = F.cross_entropy(seg_logits, batch_labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


for it in range(6):
    idx = torch.randperm(8)[:4]
    loss_value = train_step(images[idx], seg_maps[idx])
    print(f"iter {it}: loss {loss_value:.4f}")
