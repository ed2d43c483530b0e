"""Diffusion image captioning (LaDiC-style) with the BERT "space encoder" unfrozen.

Reduced from https://github.com/wangyuchi369/LaDiC/issues/5 : the author trains a latent
diffusion captioner: captions are embedded by a BERT encoder ("space encoder"), the
padding / special positions are overwritten with the embedding of the token '.', noise
is added at a random timestep, and a denoiser conditioned on image features predicts the
clean embeddings (x_0 prediction with self-conditioning input). The author unfroze the
BERT low/high layers and the embedding layer to train every component, as in the
repository's main.py.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, DIM, SEQ, BATCH, STEP_TOT = 30, 16, 8, 4, 50
PAD_ID, CLS_ID, SEP_ID, DOT_ID = 0, 1, 2, 3
IMG_DIM = 12


class SpaceEncoder(nn.Module):
    """A tiny BERT: token + position embeddings and one transformer layer."""

    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, DIM)
        self.position_embeddings = nn.Embedding(SEQ, DIM)
        self.layer = nn.TransformerEncoderLayer(DIM, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)

    def forward(self, input_ids, attention_mask=None):
        pos = torch.arange(input_ids.shape[1])
        h = self.word_embeddings(input_ids) + self.position_embeddings(pos)
        pad = None if attention_mask is None else attention_mask == 0
        return (self.layer(h, src_key_padding_mask=pad),)


class Diffuser(nn.Module):
    def __init__(self):
        super().__init__()
        self.space_encoder = SpaceEncoder()
        self.image_encoder = nn.Linear(IMG_DIM, DIM)
        self.time_embed = nn.Embedding(STEP_TOT, DIM)
        self.denoiser = nn.Sequential(nn.Linear(3 * DIM, 32), nn.GELU(), nn.Linear(32, DIM))

    def forward(self, image, x_t_selfcond, mask, t):
        img = self.image_encoder(image).unsqueeze(1).expand(-1, x_t_selfcond.shape[1], -1)
        h = torch.cat([x_t_selfcond[..., :DIM] + self.time_embed(t)[:, None, :], x_t_selfcond[..., DIM:], img], -1)
        return self.denoiser(h)


betas = torch.linspace(1e-4, 0.02, STEP_TOT)
alphas_cumprod = torch.cumprod(1 - betas, 0)


def diffuse_t(x_0, t):
    noise = torch.randn_like(x_0)
    a = alphas_cumprod[t].view(-1, 1, 1)
    return a.sqrt() * x_0 + (1 - a).sqrt() * noise


def batch_loss(model, x_pred, x_0, attention_mask, input_ids):
    x_t_loss = ((x_pred - x_0) ** 2 * attention_mask[..., None]).mean()
    logits = x_pred @ model.space_encoder.word_embeddings.weight.T
    prob_loss = F.cross_entropy(logits.reshape(-1, VOCAB), input_ids.reshape(-1))
    return x_t_loss, prob_loss


def caption_batches(num_batches):
    for _ in range(num_batches):
        lengths = torch.randint(3, SEQ - 1, (BATCH,))
        ids = torch.randint(4, VOCAB, (BATCH, SEQ))
        mask = torch.zeros(BATCH, SEQ, dtype=torch.long)
        for b, n in enumerate(lengths.tolist()):
            ids[b, 0], ids[b, n + 1:] = CLS_ID, PAD_ID
            ids[b, n] = SEP_ID
            mask[b, : n + 1] = 1
        yield {"input_ids": ids, "attention_mask": mask, "image": torch.randn(BATCH, IMG_DIM)}


model = Diffuser()
optimizer = torch.optim.AdamW(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-3)

special_ids = torch.tensor([[CLS_ID, DOT_ID, SEP_ID]])
special_emb = model.space_encoder(special_ids)[0][0][1]


def train_func(model, trainer, x):
    x_0 = model.space_encoder(input_ids=x["input_ids"], attention_mask=x["attention_mask"])[0]
    atten_mask = x["attention_mask"].clone()
    atten_mask = torch.roll(atten_mask, -1, 1)
    atten_mask[:, 0] = 0
    atten_mask[:, -1] = 0
    # change pad cls sep to the special token
    x_0[atten_mask == 0] = special_emb

    t = torch.randint(0, STEP_TOT, (x_0.shape[0],))
    x_t = diffuse_t(x_0, t)
    x_pred = torch.zeros_like(x_t)
    x_pred = model(x["image"], torch.cat([x_t, x_pred], dim=-1), x["attention_mask"], t)

    x_t_loss, prob_loss = batch_loss(model, x_pred, x_0, x["attention_mask"], x["input_ids"])
    loss = x_t_loss + prob_loss
    trainer.zero_grad()
    loss.backward()
    trainer.step()
    return loss


model.train()
for batch_num, x in enumerate(caption_batches(10)):
    loss = train_func(model, optimizer, x)
    print(f"batch {batch_num}: loss {loss.item():.4f}")
