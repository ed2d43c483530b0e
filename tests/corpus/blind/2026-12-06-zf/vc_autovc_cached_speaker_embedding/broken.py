"""AutoVC-style voice conversion: content bottleneck + speaker embedding from a cached reference.

Source: https://github.com/andimarafioti/faster-qwen3-tts/pull/37
The report: a voice-clone prompt was prepared by a library method decorated with
``@torch.inference_mode()``; the returned reference tensor was stored in a prompt cache
and later fed to a trainable embedding layer, which raised "Inference tensors cannot be
saved for backward". The accepted fix clones the cached tensor before it enters the
tracked computation. Here the author trains an AutoVC-style converter: a frozen
pretrained speaker encoder turns reference utterances into d-vectors inside an
``inference_mode`` helper whose results are cached per speaker; the trainable speaker
projection of the decoder then saves the cached inference tensor. The training setting
is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_MELS, T, DIM_SPK, DIM_NECK, FREQ = 20, 32, 16, 4, 8
N_SPEAKERS, BATCH, STEPS = 3, 4, 6


class SpeakerEncoder(nn.Module):
    """A small GE2E-like d-vector network (pretrained and frozen in the real pipeline)."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(N_MELS, 32, batch_first=True)
        self.proj = nn.Linear(32, DIM_SPK)

    def forward(self, mel):
        out, _ = self.lstm(mel)
        return F.normalize(self.proj(out[:, -1]), dim=-1)


class ContentEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(N_MELS + DIM_SPK, 64, 5, padding=2)
        self.lstm = nn.LSTM(64, DIM_NECK, batch_first=True, bidirectional=True)

    def forward(self, mel, spk):
        x = torch.cat([mel, spk.unsqueeze(1).expand(-1, mel.size(1), -1)], dim=-1)
        x = F.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
        out, _ = self.lstm(x)
        fwd, bwd = out[..., :DIM_NECK], out[..., DIM_NECK:]
        # the information bottleneck: keep every FREQ-th forward and backward code
        codes = torch.cat([fwd[:, FREQ - 1::FREQ], bwd[:, ::FREQ]], dim=-1)
        return codes


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.spk_proj = nn.Linear(DIM_SPK, 32)
        self.lstm = nn.LSTM(2 * DIM_NECK + 32, 64, batch_first=True)
        self.out = nn.Linear(64, N_MELS)

    def forward(self, codes, spk):
        up = codes.repeat_interleave(FREQ, dim=1)
        s = torch.tanh(self.spk_proj(spk)).unsqueeze(1).expand(-1, up.size(1), -1)
        h, _ = self.lstm(torch.cat([up, s], dim=-1))
        return self.out(h)


class Postnet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(N_MELS, 32, 5, padding=2), nn.Tanh(), nn.Conv1d(32, N_MELS, 5, padding=2))

    def forward(self, mel):
        return mel + self.net(mel.transpose(1, 2)).transpose(1, 2)


speaker_encoder = SpeakerEncoder().eval()
content_encoder = ContentEncoder()
decoder = Decoder()
postnet = Postnet()
optimizer = torch.optim.Adam(
    list(content_encoder.parameters()) + list(decoder.parameters()) + list(postnet.parameters()), lr=1e-3
)

# synthetic corpus: each speaker has a spectral tilt; a few reference clips per speaker
tilts = torch.randn(N_SPEAKERS, 1, N_MELS)
references = {s: torch.randn(3, T, N_MELS) * 0.3 + tilts[s] for s in range(N_SPEAKERS)}
_prompt_cache = {}


@torch.inference_mode()
def speaker_prompt(speaker):
    """Average d-vector of the speaker's reference clips, cached like a voice-clone prompt."""
    if speaker not in _prompt_cache:
        _prompt_cache[speaker] = speaker_encoder(references[speaker]).mean(0)
    return _prompt_cache[speaker]


def sample_batch():
    """Utterances of one speaker per batch (the speaker-homogeneous batches of the recipe)."""
    speaker = int(torch.randint(0, N_SPEAKERS, (1,)))
    mels = torch.randn(BATCH, T, N_MELS) * 0.3 + tilts[speaker]
    return speaker, mels


for step in range(STEPS):
    speaker, mels = sample_batch()
    spk = speaker_prompt(speaker).unsqueeze(0).expand(BATCH, -1)

    codes = content_encoder(mels, spk)
    mel_out = decoder(codes, spk)
    mel_post = postnet(mel_out)
    codes_again = content_encoder(mel_post, spk)

    loss_recon0 = F.mse_loss(mel_out, mels)
    loss_recon = F.mse_loss(mel_post, mels)
    loss_content = F.l1_loss(codes_again, codes)
    loss = loss_recon + loss_recon0 + loss_content

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: recon {loss_recon.item():.4f} content {loss_content.item():.4f}")
