"""Textual inversion of one new token on a tiny text-to-image denoiser (intended: tokens loaded under no_grad).

Source: https://github.com/google/inspiration_tree/issues/25. Inspiration Tree learns concept
tokens by textual inversion and loads previously learned token embeddings into the text encoder's
input embedding table (``load_tokens``: add the tokens, resize the table, then
``embedding.weight[token_id] = learned_vector`` for each). The reporter hit "a view of a leaf
Variable that requires grad is being used in an in-place operation" on that assignment; the fix
they and others confirmed is to wrap the loading in ``torch.no_grad()``. Here, as in the
repository's flow, two concept tokens learned earlier are loaded into the table (whose weight
requires grad, since textual inversion trains the embedding table) before a third token is learned
on a tiny frozen UNet-style denoiser with an epsilon-prediction loss and a prior-preservation loss
on a class prompt; the rows of all other tokens are restored after each step.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, DIM, SEQ, IMG, T_STEPS = 40, 16, 6, 8, 50
betas = torch.linspace(1e-4, 0.02, T_STEPS)
alphas_cumprod = torch.cumprod(1 - betas, dim=0)


class TinyTextEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.token_embedding = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.randn(SEQ, DIM) * 0.02)
        self.mix = nn.TransformerEncoderLayer(DIM, nhead=2, dim_feedforward=32, batch_first=True, dropout=0.0)

    def resize_token_embeddings(self, n):
        old = self.token_embedding
        new = nn.Embedding(n, DIM)
        new.weight.data[: old.num_embeddings] = old.weight.data
        self.token_embedding = new

    def forward(self, ids):
        return self.mix(self.token_embedding(ids) + self.pos)


class TinyUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 16, 3, padding=1)
        self.mid = nn.Conv2d(16, 16, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(16, 16, 2, stride=2)
        self.out = nn.Conv2d(32, 3, 3, padding=1)
        self.t_embed = nn.Embedding(T_STEPS, 16)
        self.ctx = nn.Linear(DIM, 16)

    def forward(self, x, t, context):
        h = F.silu(self.down(x)) + self.t_embed(t)[:, :, None, None]
        m = F.silu(self.mid(h)) + self.ctx(context.mean(1))[:, :, None, None]
        return self.out(torch.cat([F.silu(self.up(m)), h], dim=1))


def load_tokens(text_encoder, vocab, learned):
    """Add previously learned concept tokens and write their vectors into the embedding table."""
    for name in learned:
        vocab[name] = len(vocab)
    text_encoder.resize_token_embeddings(len(vocab))
    text_encoder.token_embedding.weight.requires_grad_(True)
    with torch.no_grad():
        for name, vec in learned.items():
            text_encoder.token_embedding.weight[vocab[name]] = vec


def encode(vocab, words):
    ids = [vocab[w] for w in words] + [0] * (SEQ - len(words))
    return torch.tensor(ids[:SEQ])


vocab = {f"w{i}": i for i in range(VOCAB)}
text_encoder, unet = TinyTextEncoder(), TinyUNet()
text_encoder.requires_grad_(False)
unet.requires_grad_(False)
text_encoder.token_embedding.weight.requires_grad_(True)

learned_nodes = {"<v_l>": torch.randn(DIM) * 0.1, "<v_r>": torch.randn(DIM) * 0.1}
load_tokens(text_encoder, vocab, learned_nodes)
vocab["<v_new>"] = len(vocab)
text_encoder.resize_token_embeddings(len(vocab))
token_embedding = text_encoder.token_embedding
token_embedding.weight.requires_grad_(True)
with torch.no_grad():
    token_embedding.weight[vocab["<v_new>"]] = token_embedding.weight[vocab["w3"]].clone()
orig_embeds = token_embedding.weight.detach().clone()
keep = torch.ones(len(vocab), dtype=torch.bool)
keep[vocab["<v_new>"]] = False

instance_images = torch.randn(4, 3, IMG, IMG) * 0.5 + 0.3
class_images = torch.randn(4, 3, IMG, IMG) * 0.5
instance_ids = encode(vocab, ["w1", "<v_new>", "w3"]).expand(4, SEQ)
class_ids = encode(vocab, ["w1", "w3"]).expand(4, SEQ)
optimizer = torch.optim.AdamW(token_embedding.parameters(), lr=5e-3, weight_decay=0.0)
prior_weight = 1.0


def diffusion_loss(images, ids):
    noise = torch.randn_like(images)
    t = torch.randint(0, T_STEPS, (images.shape[0],))
    a = alphas_cumprod[t].view(-1, 1, 1, 1)
    noisy = a.sqrt() * images + (1 - a).sqrt() * noise
    return F.mse_loss(unet(noisy, t, text_encoder(ids)), noise)


for step in range(30):
    instance_loss = diffusion_loss(instance_images, instance_ids)
    prior_loss = diffusion_loss(class_images, class_ids)
    loss = instance_loss + prior_weight * prior_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        token_embedding.weight[keep] = orig_embeds[keep]
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}")
