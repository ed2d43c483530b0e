"""YourTTS-style speaker adaptation with the speaker consistency loss (SCL).

Reduced from https://github.com/coqui-ai/TTS/issues/2348 (YourTTS: the speaker
consistency loss is computed with the pretrained ResNet speaker encoder, which
extracts its own spectrogram features from the waveform it is given). The
report itself is a minimal autograd snippet; the training setting here is the
writer's: a speaker-adaptation stage that fine-tunes the generator (speaker
embedding table, text encoder and waveform decoder) to a new speaker with the
speaker consistency loss alone, against reference clips of that speaker,
through the frozen speaker encoder.

Synthetic data: random phoneme ids, random reference waveforms.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_PHONEMES = 30
N_SPEAKERS = 4
HIDDEN = 24
HOP = 32
N_FFT = 64
BATCH = 4
TEXT_LEN = 10


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.text_embedding = nn.Embedding(N_PHONEMES, HIDDEN)
        self.speaker_embedding = nn.Embedding(N_SPEAKERS, HIDDEN)
        self.encoder = nn.Conv1d(HIDDEN, HIDDEN, 5, padding=2)
        self.upsample = nn.ConvTranspose1d(HIDDEN, HIDDEN // 2, HOP, stride=HOP)
        self.post = nn.Conv1d(HIDDEN // 2, 1, 7, padding=3)

    def forward(self, tokens, speaker_ids):
        h = self.text_embedding(tokens) + self.speaker_embedding(speaker_ids).unsqueeze(1)
        h = F.leaky_relu(self.encoder(h.transpose(1, 2)), 0.1)
        return torch.tanh(self.post(F.leaky_relu(self.upsample(h), 0.1)))  # (B, 1, T)


class TorchSpec(nn.Module):
    """Log-magnitude spectrogram computed inside the speaker encoder."""

    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(N_FFT))

    def forward(self, wav):
        spec = torch.stft(wav, N_FFT, hop_length=N_FFT // 4, window=self.window, return_complex=True)
        return torch.log(spec.abs() + 1e-5)


class ResNetSpeakerEncoder(nn.Module):
    def __init__(self, proj_dim=16):
        super().__init__()
        self.torch_spec = TorchSpec()
        self.conv1 = nn.Conv1d(N_FFT // 2 + 1, 32, 3, padding=1)
        self.conv2 = nn.Conv1d(32, 32, 3, padding=1)
        self.fc = nn.Linear(32, proj_dim)

    def forward(self, x, l2_norm=True):
        x = x.squeeze(1)
        x = self.torch_spec(x)
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x)) + x
        x = self.fc(x.mean(dim=2))
        if l2_norm:
            x = F.normalize(x, p=2, dim=1)
        return x


class AdaptationTrainer:
    def __init__(self, generator, speaker_encoder, lr=2e-4):
        self.generator = generator
        self.speaker_encoder = speaker_encoder
        self.optimizer = torch.optim.AdamW(generator.parameters(), lr=lr, betas=(0.8, 0.99), weight_decay=0.01)

    def speaker_consistency_loss(self, wav_hat, wav_ref):
        emb_hat = self.speaker_encoder(wav_hat)
        emb_ref = self.speaker_encoder(wav_ref)
        return -F.cosine_similarity(emb_hat, emb_ref).mean()

    def train_step(self, tokens, speaker_ids, wav_ref):
        self.optimizer.zero_grad()
        wav_hat = self.generator(tokens, speaker_ids)
        loss_scl = self.speaker_consistency_loss(wav_hat, wav_ref)
        loss_scl.backward()
        self.optimizer.step()
        return loss_scl.item()


def main():
    generator = Generator()
    speaker_encoder = ResNetSpeakerEncoder()
    speaker_encoder.eval()
    for p in speaker_encoder.parameters():
        p.requires_grad_(False)

    tokens = torch.randint(0, N_PHONEMES, (BATCH, TEXT_LEN))
    speaker_ids = torch.full((BATCH,), 2, dtype=torch.long)
    wav_ref = torch.randn(BATCH, 1, TEXT_LEN * HOP) * 0.3

    trainer = AdaptationTrainer(generator, speaker_encoder)
    for step in range(3):
        print(f"step {step}: scl {trainer.train_step(tokens, speaker_ids, wav_ref):.4f}")


if __name__ == "__main__":
    main()
