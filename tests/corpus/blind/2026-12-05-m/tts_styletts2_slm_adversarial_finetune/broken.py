"""StyleTTS2-style fine-tuning with SLM adversarial training (WavLM discriminator).

Reduced from https://github.com/yl4579/StyleTTS2/issues/73 (fine-tuning with
``train_finetune.py``; same report as issue #72). The author fine-tunes a
text-to-speech model (text encoder, duration/prosody predictor, waveform
decoder) with a mel reconstruction loss, then, in the same iteration, with the
SLM adversarial objective: a frozen speech language model embeds real and
generated waveforms, a small weight-normalised convolutional discriminator
(``wd``) scores them, the discriminator gets ``d_loss_slm`` and the generator
gets ``loss_gen_lm``. All modules are stepped through one ``MultiOptimizer``
that holds one AdamW per module, stepped by key.

Synthetic data: random phoneme ids and random target waveforms; the frozen
"WavLM" is a fixed random conv stack.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import weight_norm

torch.manual_seed(0)

N_PHONEMES = 40
HIDDEN = 32
HOP = 16
BATCH = 4
TEXT_LEN = 12
LRELU_SLOPE = 0.1


class TextEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(N_PHONEMES, HIDDEN)
        self.conv = nn.Conv1d(HIDDEN, HIDDEN, 5, padding=2)

    def forward(self, tokens):
        x = self.embedding(tokens).transpose(1, 2)
        return F.leaky_relu(self.conv(x), 0.2)


class ProsodyPredictor(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(HIDDEN, HIDDEN // 2, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, h):
        out, _ = self.lstm(h.transpose(1, 2))
        return torch.tanh(self.proj(out)).transpose(1, 2)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose1d(HIDDEN, HIDDEN // 2, HOP, stride=HOP)
        self.post = nn.Conv1d(HIDDEN // 2, 1, 7, padding=3)

    def forward(self, h):
        return torch.tanh(self.post(F.leaky_relu(self.up(h), LRELU_SLOPE)))


class FrozenSLM(nn.Module):
    """Stand-in for WavLM: a fixed feature extractor returning every layer's hidden states."""

    def __init__(self, layers=3, width=16):
        super().__init__()
        self.convs = nn.ModuleList(
            [nn.Conv1d(1, width, 8, stride=4, padding=2)] + [nn.Conv1d(width, width, 7, padding=3) for _ in range(layers - 1)]
        )

    def forward(self, wav):
        hidden_states = []
        x = wav
        for conv in self.convs:
            x = F.gelu(conv(x))
            hidden_states.append(x)
        return hidden_states


class WavLMDiscriminator(nn.Module):
    def __init__(self, slm_hidden=16, slm_layers=3, initial_channel=16):
        super().__init__()
        self.pre = weight_norm(nn.Conv1d(slm_hidden * slm_layers, initial_channel, 1, 1, padding=0))
        self.convs = nn.ModuleList(
            [
                weight_norm(nn.Conv1d(initial_channel, initial_channel * 2, kernel_size=5, padding=2)),
                weight_norm(nn.Conv1d(initial_channel * 2, initial_channel * 2, kernel_size=5, padding=2)),
            ]
        )
        self.conv_post = weight_norm(nn.Conv1d(initial_channel * 2, 1, 3, 1, padding=1))

    def forward(self, x):
        x = self.pre(x)
        for layer in self.convs:
            x = F.leaky_relu(layer(x), LRELU_SLOPE)
        x = self.conv_post(x)
        return torch.flatten(x, 1, -1)


class WavLMLoss(nn.Module):
    def __init__(self, slm, wd):
        super().__init__()
        self.wavlm = slm
        self.wd = wd

    def _embed(self, wav):
        return torch.cat(self.wavlm(wav), dim=1)

    def generator(self, y_rec):
        y_df_hat_g = self.wd(self._embed(y_rec))
        return torch.mean((1 - y_df_hat_g) ** 2)

    def discriminator(self, wav, y_rec):
        with torch.no_grad():
            y_embeddings = self._embed(wav)
            y_rec_embeddings = self._embed(y_rec)
        y_d_rs = self.wd(y_embeddings)
        y_d_gs = self.wd(y_rec_embeddings)
        r_loss = torch.mean((1 - y_d_rs) ** 2)
        g_loss = torch.mean(y_d_gs**2)
        return r_loss + g_loss


class MultiOptimizer:
    def __init__(self, optimizers):
        self.optimizers = optimizers
        self.keys = list(optimizers.keys())

    def step(self, key=None):
        keys = [key] if key is not None else self.keys
        for k in keys:
            self.optimizers[k].step()

    def zero_grad(self, key=None):
        keys = [key] if key is not None else self.keys
        for k in keys:
            self.optimizers[k].zero_grad()


def build_optimizers(parameters_dict, lr=1e-4):
    return {
        key: torch.optim.AdamW(params, lr=lr, weight_decay=1e-4, betas=(0.0, 0.99))
        for key, params in parameters_dict.items()
    }


def slm_adversarial(model, wl, texts, waves):
    """Synthesise from text again and return (d_loss_slm, loss_gen_lm, y_pred)."""
    h = model["text_encoder"](texts)
    h = h + model["predictor"](h)
    y_pred = model["decoder"](h)
    d_loss = wl.discriminator(waves.detach(), y_pred.detach()).mean()
    gen_loss = wl.generator(y_pred)
    return d_loss, gen_loss, y_pred.detach()


def main():
    model = {
        "text_encoder": TextEncoder(),
        "predictor": ProsodyPredictor(),
        "decoder": Decoder(),
        "wd": WavLMDiscriminator(),
    }
    slm = FrozenSLM()
    for p in slm.parameters():
        p.requires_grad_(False)
    wl = WavLMLoss(slm, model["wd"])
    optimizers = build_optimizers({key: model[key].parameters() for key in model})
    optimizer = MultiOptimizer(optimizers)

    texts = torch.randint(0, N_PHONEMES, (BATCH, TEXT_LEN))
    waves = torch.randn(BATCH, 1, TEXT_LEN * HOP) * 0.3

    for epoch in range(3):
        # mel reconstruction (here: waveform L1 on the synthesised batch)
        optimizer.zero_grad()
        h = model["text_encoder"](texts)
        h = h + model["predictor"](h)
        y_rec = model["decoder"](h)
        g_loss = F.l1_loss(y_rec, waves)
        g_loss.backward()
        optimizer.step("text_encoder")
        optimizer.step("predictor")
        optimizer.step("decoder")

        # SLM adversarial training
        d_loss_slm, loss_gen_lm, y_pred = slm_adversarial(model, wl, texts, waves)

        # SLM discriminator loss
        if d_loss_slm != 0:
            optimizer.zero_grad()
            d_loss_slm.backward()
            optimizer.step("wd")

        # SLM generator loss
        optimizer.zero_grad()
        loss_gen_lm.backward()

        optimizer.step("predictor")
        optimizer.step("decoder")

        print(f"epoch {epoch}: mel {g_loss.item():.4f} d_slm {d_loss_slm.item():.4f} gen_lm {loss_gen_lm.item():.4f}")


if __name__ == "__main__":
    main()
