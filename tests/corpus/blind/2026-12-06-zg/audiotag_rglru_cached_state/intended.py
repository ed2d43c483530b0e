"""Weakly labelled audio tagging: log-mel CNN front end, RG-LRU over frames, attention pooling.

Report: https://github.com/huggingface/transformers/issues/31324
The author used a single ``RecurrentGemmaRglru`` layer (followed by a linear layer) as a sequence
classifier and got "Trying to backward through the graph a second time" after the first
training step. The layer keeps the final state of its scan on itself
(``self.recurrent_states = recurrent_states``) and feeds it back as the initial state of the next
call; at position 0 it multiplies the recurrence gate by ``~reset``, so the next clip starts from
zero numerically, but the product still links the new graph to the previous batch's freed one.
Inside RecurrentGemma's recurrent block the cache is cleared (``rg_lru.recurrent_states = None``)
whenever no cache is used; used on its own, nothing clears it. The training setting is the
writer's: clip-level tagging from log-mel patches with an RG-LRU temporal layer written after the
library's, decision-level attention pooling and a binary cross-entropy on weak clip labels.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_MELS, N_FRAMES, N_CLASSES, WIDTH = 32, 40, 6, 32


class RGLRU(nn.Module):
    """Real-gated linear recurrent unit, as in RecurrentGemma (single head)."""

    def __init__(self, width):
        super().__init__()
        self.input_gate = nn.Linear(width, width)
        self.recurrent_gate = nn.Linear(width, width)
        self.recurrent_param = nn.Parameter(torch.linspace(0.5, 2.0, width))
        self.recurrent_states = None

    def forward(self, x, position_ids):
        reset = position_ids[:, :, None] == 0
        log_a = -8.0 * torch.sigmoid(self.recurrent_gate(x)) * F.softplus(self.recurrent_param)
        a = torch.exp(log_a)
        multiplier = torch.sqrt(1 - torch.exp(2 * log_a))
        multiplier = reset + ~reset * multiplier
        normalized_x = x * torch.sigmoid(self.input_gate(x)) * multiplier
        hidden, state = self._scan(normalized_x, a * ~reset, self.recurrent_states)
        self.recurrent_states = state
        return hidden

    def _scan(self, x, a, state):
        if state is None:
            state = torch.zeros_like(x[:, 0])
        outs = []
        for t in range(x.shape[1]):
            state = a[:, t] * state + x[:, t]
            outs.append(state)
        return torch.stack(outs, dim=1), state


class ConvBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return F.avg_pool2d(F.relu(self.bn(self.conv(x))), kernel_size=(1, 2))


class AttentionPoolTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.frontend = nn.Sequential(ConvBlock(1, 16), ConvBlock(16, 16))
        self.to_width = nn.Linear(16 * (N_MELS // 4), WIDTH)
        self.temporal = RGLRU(WIDTH)
        self.att = nn.Linear(WIDTH, N_CLASSES)
        self.cla = nn.Linear(WIDTH, N_CLASSES)

    def forward(self, logmel):
        b = logmel.shape[0]
        h = self.frontend(logmel[:, None])
        h = self.to_width(h.permute(0, 2, 1, 3).reshape(b, N_FRAMES, -1))
        position_ids = torch.arange(N_FRAMES)[None].expand(b, -1)
        h = self.temporal(h, position_ids)
        att = torch.softmax(torch.tanh(self.att(h)), dim=1)
        frame_prob = torch.sigmoid(self.cla(h))
        return (att * frame_prob).sum(dim=1).clamp(1e-6, 1 - 1e-6), frame_prob


def make_clips(n):
    labels = (torch.rand(n, N_CLASSES) < 0.3).float()
    logmel = torch.randn(n, N_FRAMES, N_MELS) * 0.5
    for c in range(N_CLASSES):
        start = torch.randint(0, N_FRAMES - 8, (n,))
        for i in range(n):
            if labels[i, c] > 0:
                logmel[i, start[i]:start[i] + 8, c * 5:c * 5 + 4] += 2.0
    return logmel, labels


model = AttentionPoolTagger()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
logmel, labels = make_clips(48)

for epoch in range(2):
    for i in range(0, 48, 16):
        model.temporal.recurrent_states = None
        clip_prob, _ = model(logmel[i:i + 16])
        loss = F.binary_cross_entropy(clip_prob, labels[i:i + 16])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: clip BCE {loss.item():.4f}")
