"""Textual inversion: learn one pseudo-word embedding for a frozen text encoder with a diffusion loss.

Report: https://github.com/huggingface/diffusers/issues/3256
The author wanted the embedding of a new token to be produced by a function of a trainable
weight ("MyFunction(Trainable_Weight)") and wrote that result into
``text_encoder.get_input_embeddings().weight`` of a frozen CLIP text encoder; every step raised
"a view of a leaf Variable that requires grad is being used in an in-place operation". The
author asked how to make the row an intermediate node instead of a leaf. Here the function is a
small mapper from a trainable code to the placeholder row, the text encoder and the denoiser are
tiny stand-ins, and the diffusion loss is the usual epsilon-prediction MSE.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, DIM, SEQ, LATENT = 50, 32, 6, 16
PLACEHOLDER = VOCAB - 1


class TinyTextEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.token_embedding = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.randn(SEQ, DIM) * 0.02)
        layer = nn.TransformerEncoderLayer(DIM, 4, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1)

    def get_input_embeddings(self):
        return self.token_embedding

    def forward(self, ids=None, inputs_embeds=None):
        if inputs_embeds is None:
            inputs_embeds = self.token_embedding(ids)
        return self.encoder(inputs_embeds + self.pos)


class TinyDenoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.t_embed = nn.Linear(1, DIM)
        self.inp = nn.Linear(LATENT, DIM)
        self.out = nn.Sequential(nn.SiLU(), nn.Linear(DIM, LATENT))

    def forward(self, x, t, cond):
        h = self.inp(x) + self.t_embed(t[:, None].float() / 1000.0) + cond.mean(1)
        return self.out(h)


class ConceptMapper(nn.Module):
    """MyFunction: maps a trainable code to the placeholder token's embedding row."""

    def __init__(self, init_row):
        super().__init__()
        self.code = nn.Parameter(init_row.clone())
        self.proj = nn.Linear(DIM, DIM)
        nn.init.eye_(self.proj.weight)
        nn.init.zeros_(self.proj.bias)

    def forward(self):
        return self.proj(self.code)


text_encoder = TinyTextEncoder()
unet = TinyDenoiser()
for p in list(text_encoder.parameters()) + list(unet.parameters()):
    p.requires_grad_(False)

init_token = 7  # "toy"
mapper = ConceptMapper(text_encoder.get_input_embeddings().weight[init_token].detach())
optimizer = torch.optim.AdamW(mapper.parameters(), lr=5e-3, weight_decay=0.0)

betas = torch.linspace(1e-4, 0.02, 1000)
alphas_cumprod = torch.cumprod(1 - betas, 0)

# "a photo of <concept>" prompts and latents of the concept's images
prompt_ids = torch.tensor([[1, 2, 3, PLACEHOLDER, 4, 5]]).repeat(8, 1)
concept_latents = torch.randn(8, LATENT) * 0.5 + 1.0


def add_noise(x0, noise, t):
    a = alphas_cumprod[t][:, None]
    return a.sqrt() * x0 + (1 - a).sqrt() * noise


for step in range(4):
    embeds = text_encoder.get_input_embeddings()(prompt_ids)
    is_placeholder = (prompt_ids == PLACEHOLDER)[..., None]
    embeds = torch.where(is_placeholder, mapper().expand_as(embeds), embeds)
    cond = text_encoder(inputs_embeds=embeds)
    noise = torch.randn_like(concept_latents)
    t = torch.randint(0, 1000, (concept_latents.shape[0],))
    noisy = add_noise(concept_latents, noise, t)
    pred = unet(noisy, t, cond)
    loss = F.mse_loss(pred, noise)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
