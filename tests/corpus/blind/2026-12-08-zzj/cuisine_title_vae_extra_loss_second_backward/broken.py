"""Cuisine-controlled recipe-title VAE: the attribute loss is backpropagated after the VAE loss freed the decoder.

Reduced from GBLin5566/toward-controlled-generation-of-text-pytorch issue #8,
"RuntimeError: Trying to backward through the graph a second time, but the buffers
have already been freed. Specify retain_graph=True when calling backward the first
time." (https://github.com/GBLin5566/toward-controlled-generation-of-text-pytorch/issues/8),
read with the repository's train.py and the owner's issue #7.

The reporter ran the repository's implementation of Hu et al.'s "Toward Controlled
Generation of Text": an LSTM encoder gives a latent code, an LSTM decoder conditioned on
the code and a one-hot attribute ``c`` generates a sentence word by word with soft
(low-temperature) outputs, and a discriminator scores the generated soft sentence for
the attribute. ``train_vae_with_attr_loss`` formed ``total_vae_loss = vae_loss + ll``
and ``extra_decoder_loss = lambda_c * l_attr_c + lambda_z * l_attr_z`` from the same
decoder pass, then ran ``total_vae_loss.backward(); e_opt.step();
extra_decoder_loss.backward(); g_opt.step()``. The second backward failed with the
error above: it runs back through the decoder unroll whose saved tensors the first
backward freed. The owner's diagnosis (issue #7): computing the extra loss with the VAE
loss traces the decoder's graph twice. The model's intent is that the encoder learns
from the VAE loss only, while the generator (decoder) learns from the VAE loss plus
the attribute loss, both from this one forward pass.

Here the sentences are recipe titles over a small vocabulary and the attribute is the
cuisine; the discriminator is a small pretrained (then frozen) cuisine classifier over
soft token sequences. The reduction keeps the encoder, the conditioned decoder unroll
with soft outputs, the VAE and attribute losses, the two optimizers and the order of
backward and step calls; it drops the reporter's latent-reconstruction term.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(8)

HPARAMS = {
    "vocab": 20,
    "cuisines": 3,
    "title_len": 7,
    "embed": 16,
    "hidden": 32,
    "latent": 8,
    "batch_size": 16,
    "batches": 4,
    "epochs": 3,
    "lambda_c": 0.5,
    "temperature": 0.5,
    "lr": 2e-3,
    "disc_pretrain_steps": 2,
}
BOS = 0


def recipe_titles(hp, n):
    """Token sequences whose content words lean towards each cuisine's vocabulary block."""
    cuisine = torch.randint(hp["cuisines"], (n,))
    block = (hp["vocab"] - 2) // hp["cuisines"]
    base = torch.randint(2, hp["vocab"], (n, hp["title_len"] - 1))
    own = 2 + cuisine.unsqueeze(1) * block + torch.randint(block, (n, hp["title_len"] - 1))
    pick = torch.rand(n, hp["title_len"] - 1) < 0.7
    words = torch.where(pick, own, base)
    titles = torch.cat([torch.full((n, 1), BOS), words], dim=1)
    return titles, cuisine


class TitleEncoder(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.embed = nn.Embedding(hp["vocab"], hp["embed"])
        self.rnn = nn.GRU(hp["embed"], hp["hidden"], batch_first=True)
        self.to_mean = nn.Linear(hp["hidden"], hp["latent"])
        self.to_logvar = nn.Linear(hp["hidden"], hp["latent"])

    def forward(self, titles):
        _, h = self.rnn(self.embed(titles))
        h = h[-1]
        self.z_mean, self.z_logvar = self.to_mean(h), self.to_logvar(h)
        std = torch.exp(0.5 * self.z_logvar)
        return self.z_mean + std * torch.randn_like(std)


class TitleDecoder(nn.Module):
    """GRU cell conditioned on [z, c]; consumes soft one-hot tokens."""

    def __init__(self, hp):
        super().__init__()
        self.embed = nn.Linear(hp["vocab"], hp["embed"], bias=False)
        self.init_h = nn.Linear(hp["latent"] + hp["cuisines"], hp["hidden"])
        self.cell = nn.GRUCell(hp["embed"] + hp["cuisines"], hp["hidden"])
        self.out = nn.Linear(hp["hidden"], hp["vocab"])

    def forward(self, word_soft, h, c):
        h = self.cell(torch.cat([self.embed(word_soft), c], dim=1), h)
        return self.out(h), h


class CuisineDiscriminator(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.embed = nn.Linear(hp["vocab"], hp["embed"], bias=False)
        self.conv = nn.Conv1d(hp["embed"], hp["hidden"], kernel_size=3, padding=1)
        self.head = nn.Linear(hp["hidden"], hp["cuisines"])

    def forward(self, soft_titles):
        x = self.embed(soft_titles).transpose(1, 2)
        return self.head(F.relu(self.conv(x)).max(dim=2).values)


def latent_loss(mean, logvar):
    return -0.5 * torch.mean(1 + logvar - mean.pow(2) - logvar.exp())


def pretrain_discriminator(discriminator, hp):
    d_opt = torch.optim.Adam(discriminator.parameters(), lr=hp["lr"])
    for _ in range(hp["disc_pretrain_steps"]):
        titles, cuisine = recipe_titles(hp, hp["batch_size"])
        d_loss = F.cross_entropy(discriminator(F.one_hot(titles, hp["vocab"]).float()), cuisine)
        d_opt.zero_grad()
        d_loss.backward()
        d_opt.step()
    discriminator.eval()
    discriminator.requires_grad_(False)


def main():
    hp = HPARAMS
    encoder, decoder = TitleEncoder(hp), TitleDecoder(hp)
    discriminator = CuisineDiscriminator(hp)
    pretrain_discriminator(discriminator, hp)

    e_opt = torch.optim.Adam(encoder.parameters(), lr=hp["lr"])
    g_opt = torch.optim.Adam(decoder.parameters(), lr=hp["lr"])

    for epoch in range(hp["epochs"]):
        for batch in range(hp["batches"]):
            encoder.zero_grad()
            decoder.zero_grad()
            titles, cuisine = recipe_titles(hp, hp["batch_size"])
            c = F.one_hot(cuisine, hp["cuisines"]).float()

            z = encoder(titles)
            h = torch.tanh(decoder.init_h(torch.cat([z, c], dim=1)))
            word = F.one_hot(titles[:, 0], hp["vocab"]).float()
            generated = [word]
            vae_loss = 0
            for t in range(hp["title_len"] - 1):
                logits, h = decoder(word, h, c)
                vae_loss = vae_loss + F.cross_entropy(logits, titles[:, t + 1])
                word = F.softmax(logits / hp["temperature"], dim=1)  # soft next word
                generated.append(word)
            ll = latent_loss(encoder.z_mean, encoder.z_logvar)

            generated_title = torch.stack(generated, dim=1)
            l_attr_c = F.cross_entropy(discriminator(generated_title), cuisine)

            total_vae_loss = vae_loss + ll
            extra_decoder_loss = hp["lambda_c"] * l_attr_c
            total_vae_loss.backward()
            e_opt.step()
            extra_decoder_loss.backward()
            g_opt.step()

        print(f"epoch {epoch}: vae {total_vae_loss.item():.3f} attr {l_attr_c.item():.3f}")


if __name__ == "__main__":
    main()
