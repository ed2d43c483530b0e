"""Speech recognition with CTC in a SpeechBrain-style ``Brain`` (compute_forward / compute_objectives / fit_batch).

Reduced from https://github.com/speechbrain/speechbrain/issues/735: the author follows the
tutorial, computes filterbank features on the fly in ``prepare_features`` (with the
augmentation that concatenates a noisy copy of the batch during training), runs the encoder
on them ("prevent propagation to feature extraction"), and trains with a CTC objective.
Synthetic waveforms and transcripts, CPU, one Adam optimizer over the acoustic model.
"""

import enum

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_TOKENS = 12  # blank + 11 characters


class Stage(enum.Enum):
    TRAIN = 1
    VALID = 2


class Fbank(nn.Module):
    """Fixed (non-trainable) framing + random projection standing in for a mel filterbank."""

    def __init__(self, frame=40, hop=20, n_mels=20):
        super().__init__()
        self.frame, self.hop = frame, hop
        self.register_buffer("filters", torch.randn(frame, n_mels).abs())

    def forward(self, wavs):
        frames = wavs.unfold(1, self.frame, self.hop)
        return torch.log1p((frames**2) @ self.filters)


class InputNormalization(nn.Module):
    def forward(self, feats, lens):
        return (feats - feats.mean(dim=1, keepdim=True)) / (feats.std(dim=1, keepdim=True) + 1e-5)


class CRDNN(nn.Module):
    def __init__(self, n_mels=20, hidden=32):
        super().__init__()
        self.cnn = nn.Conv1d(n_mels, hidden, 3, padding=1)
        self.rnn = nn.GRU(hidden, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, N_TOKENS)

    def forward(self, feats):
        x = F.leaky_relu(self.cnn(feats.transpose(1, 2))).transpose(1, 2)
        x, _ = self.rnn(x)
        return F.log_softmax(self.out(x), dim=-1)


class ASRBrain:
    def __init__(self, modules, opt_class):
        self.modules = nn.ModuleDict(modules)
        self.optimizer = opt_class(self.modules["model"].parameters())

    def add_noise(self, wavs):
        return wavs + 0.05 * torch.randn_like(wavs)

    def prepare_features(self, stage, wavs):
        wavs, wav_lens = wavs
        # Add augmentation if specified: concatenate the original and the augmented batches.
        if stage == Stage.TRAIN:
            wavs = torch.cat([wavs, self.add_noise(wavs)], dim=0)
            wav_lens = torch.cat([wav_lens, wav_lens])
        feats = self.modules["compute_features"](wavs)
        feats = self.modules["mean_var_norm"](feats, wav_lens)
        return feats, wav_lens

    def compute_forward(self, batch, stage):
        with torch.no_grad():
            feats, self.feat_lens = self.prepare_features(stage, batch["sig"])
            # Running the encoder (prevent propagation to feature extraction)
            predict = self.modules["model"](feats)
        return {"predict": predict}

    def compute_objectives(self, predictions, batch, stage):
        log_probs = predictions["predict"]
        tokens, token_lens = batch["tokens"]
        if stage == Stage.TRAIN:
            tokens = torch.cat([tokens, tokens], dim=0)
            token_lens = torch.cat([token_lens, token_lens])
        input_lens = torch.full((log_probs.shape[0],), log_probs.shape[1], dtype=torch.long)
        return F.ctc_loss(log_probs.transpose(0, 1), tokens, input_lens, token_lens, blank=0, zero_infinity=True)

    def fit_batch(self, batch):
        predictions = self.compute_forward(batch, Stage.TRAIN)
        loss = self.compute_objectives(predictions, batch, Stage.TRAIN)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return loss.detach()

    def fit(self, batches):
        self.modules.train()
        for i, batch in enumerate(batches):
            print(i, self.fit_batch(batch).item())


def make_batches(n=4, batch_size=3, n_samples=400, max_tokens=5):
    batches = []
    for _ in range(n):
        sig = torch.randn(batch_size, n_samples)
        lens = torch.ones(batch_size)
        tokens = torch.randint(1, N_TOKENS, (batch_size, max_tokens))
        token_lens = torch.randint(2, max_tokens + 1, (batch_size,))
        batches.append({"sig": (sig, lens), "tokens": (tokens, token_lens)})
    return batches


if __name__ == "__main__":
    modules = {"compute_features": Fbank(), "mean_var_norm": InputNormalization(), "model": CRDNN()}
    brain = ASRBrain(modules, lambda params: torch.optim.Adam(params, lr=1e-3))
    brain.fit(make_batches())
