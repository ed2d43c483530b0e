"""Fine-tuning the decoder of a Silero-style voice activity detector on 32 ms chunks.

Reduced from https://github.com/snakers4/silero-vad/issues/666 : the author fine-tunes
the VAD with their own copy of the repository's tuning loop (tuning/utils.py `train`).
The pretrained STFT front end and encoder stay frozen; only the recurrent decoder
(an LSTMCell and a 1x1 conv head with a sigmoid) is trained with a masked BCE loss.
Each padded batch of audio is cut into 512-sample windows with 64 samples of context,
and the decoder runs over the windows one after the other, feeding its (h, c) state
forward, the way the model runs when it streams audio.
"""

import torch
import torch.nn as nn

torch.manual_seed(0)

NUM_SAMPLES, CONTEXT, SR = 512, 64, 16000
NO_STATE = torch.zeros(0)


class FrozenFrontEnd(nn.Module):
    """Stand-in for the pretrained jit model's STFT layer and encoder."""

    def __init__(self):
        super().__init__()
        self.stft = nn.Conv1d(1, 32, kernel_size=64, stride=64)
        self.encoder = nn.Sequential(nn.Conv1d(32, 128, kernel_size=3, padding=1), nn.ReLU())

    def stft_layer(self, x):
        return self.stft(x.unsqueeze(1)).abs()

    def encoder_layer(self, x):
        return self.encoder(x).mean(-1, keepdim=True)


class VADDecoderRNNJIT(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTMCell(128, 128)
        self.decoder = nn.Sequential(nn.Dropout(0.1), nn.ReLU(), nn.Conv1d(128, 1, kernel_size=1), nn.Sigmoid())

    def forward(self, x, state=NO_STATE):
        x = x.squeeze(-1)
        if len(state):
            h, c = self.rnn(x, (state[0], state[1]))
        else:
            h, c = self.rnn(x)
        x = h.unsqueeze(-1).float()
        state = torch.stack([h, c])
        x = self.decoder(x)
        return x, state


def speech_batches(num_batches, batch_size=4, seconds=0.192):
    """Synthetic audio: a tone burst where there is speech, noise elsewhere."""
    n = int(seconds * SR)
    for _ in range(num_batches):
        x = 0.05 * torch.randn(batch_size, n)
        targets = torch.zeros(batch_size, n // NUM_SAMPLES)
        for b in range(batch_size):
            start = int(torch.randint(0, targets.shape[1] - 2, (1,)))
            targets[b, start : start + 3] = 1
            t = torch.arange(start * NUM_SAMPLES, (start + 3) * NUM_SAMPLES)
            x[b, t] += 0.5 * torch.sin(2 * torch.pi * 220 * t / SR)
        masks = torch.where(targets == 0, torch.full_like(targets, 0.5), torch.ones_like(targets))
        yield x, targets, masks


def train(loader, jit_model, decoder, criterion, optimizer):
    decoder.train()
    stft_layer, encoder_layer = jit_model.stft_layer, jit_model.encoder_layer
    with torch.enable_grad():
        for step, (x, targets, masks) in enumerate(loader):
            x = torch.nn.functional.pad(x, (CONTEXT, 0))
            outs = []
            state = torch.zeros(0)
            for i in range(CONTEXT, x.shape[1], NUM_SAMPLES):
                input_ = x[:, i - CONTEXT : i + NUM_SAMPLES]
                out = stft_layer(input_)
                out = encoder_layer(out)
                out, state = decoder(out, state)
                outs.append(out)
            stacked = torch.cat(outs, dim=2).squeeze(1)

            loss = criterion(stacked, targets)
            loss = (loss * masks).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"batch {step}: loss {loss.item():.4f}")


jit_model = FrozenFrontEnd().eval()
jit_model.requires_grad_(False)
decoder = VADDecoderRNNJIT()
criterion = nn.BCELoss(reduction="none")
optimizer = torch.optim.Adam(decoder.parameters(), lr=5e-4)
train(speech_batches(5), jit_model, decoder, criterion, optimizer)
