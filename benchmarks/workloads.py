"""Realistic CPU training steps for the ``track()`` benchmarks: a small CNN, a transformer, an LSTM.

Each workload is a full training step (``zero_grad``, forward, loss, ``backward``,
``step``) on fixed, seeded data, built fresh for every timed run so that every
variant starts from the same parameters and optimizer state. Sizes are chosen so
that one step takes milliseconds on one CPU thread: large enough that per-op
overhead is diluted as in real training, small enough to repeat many times.

- ``cnn``: 2 conv + batch-norm + ReLU + max-pool blocks, 2 linear layers;
  a batch of 32 images of 3x32x32, 10 classes, cross-entropy.
- ``transformer``: token embedding, 2 ``nn.TransformerEncoderLayer`` (d=128,
  4 heads, feed-forward 256, dropout 0.1, batch first), linear head over a
  vocabulary of 1,000; a batch of 16 sequences of 32 tokens, next-token loss.
- ``lstm``: embedding, 2-layer ``nn.LSTM`` (64 -> 128), linear head over 1,000
  tokens; truncated back-propagation through time: each step is one chunk of
  35 tokens x 16 sequences, the hidden state carried over *detached* from the
  previous chunk (the usual language-model loop).
- ``resnet18``: a ResNet-18 (torchvision's layout, written out here: a 7x7
  stem, four stages of two basic blocks with 64, 128, 256 and 512 channels,
  batch norm, 11.2 M parameters), a batch of 8 images of 3x64x64, 10 classes.
- ``lm6``: a 6-layer causal transformer language model (d=256, 4 heads,
  feed-forward 1024, dropout 0.1, pre-norm, learned positions, a head tied to
  nothing) over 2,000 tokens; a batch of 8 sequences of 64 tokens.

Optimizers: ``SGD(lr=0.01, momentum=0.9)`` or ``Adam(lr=1e-3)`` (torch's
defaults otherwise: on CPU both take the single-tensor path, one Python-level
in-place call per parameter and update, which is the worst case for gradlab's
in-place wrappers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

__all__ = ["Workload", "WORKLOADS", "OPTIMIZERS", "build"]

VOCAB = 1_000


@dataclass
class Workload:
    """A model, its optimizer and a ``step()`` that runs one full training step."""

    name: str
    model: nn.Module
    optimizer: torch.optim.Optimizer
    step: Callable[[], float]

    @property
    def names(self) -> dict[str, nn.Module]:
        return {self.name: self.model}


def _optimizer(kind: str, model: nn.Module) -> torch.optim.Optimizer:
    if kind == "SGD":
        return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if kind == "Adam":
        return torch.optim.Adam(model.parameters(), lr=1e-3)
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, not {kind!r}")


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(32 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


class TinyTransformer(nn.Module):
    def __init__(self, d: int = 128) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d)
        layer = nn.TransformerEncoderLayer(d, nhead=4, dim_feedforward=256, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(d, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(tokens)))


class TinyLSTM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 64)
        self.lstm = nn.LSTM(64, 128, num_layers=2)
        self.head = nn.Linear(128, VOCAB)

    def forward(
        self, tokens: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        out, state = self.lstm(self.embed(tokens), state)
        return self.head(out), state


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.down = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.down(x))


class ResNet18(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)
        )
        stages: list[nn.Module] = []
        cin = 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            stages += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.stages = nn.Sequential(*stages)
        self.head = nn.Linear(512, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.stages(self.stem(x)).mean(dim=(2, 3)))


LM_VOCAB = 2_000


class TransformerLM(nn.Module):
    def __init__(self, d: int = 256, layers: int = 6, context: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(LM_VOCAB, d)
        self.position = nn.Parameter(torch.zeros(context, d))
        layer = nn.TransformerEncoderLayer(
            d, nhead=4, dim_feedforward=4 * d, dropout=0.1, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, LM_VOCAB)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(context), persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        n = tokens.shape[1]
        h = self.embed(tokens) + self.position[:n]
        h = self.blocks(h, mask=self.mask[:n, :n], is_causal=True)
        return self.head(self.norm(h))


def _classifier(name: str, make: Callable[[], nn.Module], kind: str, steps: int, batch: int, side: int) -> Workload:
    """A classifier's training step on random images (``batch`` x 3 x ``side`` x ``side``), 10 classes."""
    torch.manual_seed(0)
    model = make()
    opt = _optimizer(kind, model)
    g = torch.Generator().manual_seed(1)
    data = [
        (torch.randn(batch, 3, side, side, generator=g), torch.randint(0, 10, (batch,), generator=g))
        for _ in range(steps)
    ]
    loss_fn = nn.CrossEntropyLoss()
    i = 0

    def step() -> float:
        nonlocal i
        x, y = data[i % len(data)]
        i += 1
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return float(loss.detach())

    return Workload(name, model, opt, step)


def _cnn(kind: str, steps: int) -> Workload:
    return _classifier("cnn", SmallCNN, kind, steps, 32, 32)


def _language_model(
    name: str, make: Callable[[], nn.Module], kind: str, steps: int, vocab: int, batch: int, length: int
) -> Workload:
    """A next-token training step on random token sequences (``batch`` x ``length`` + 1)."""
    torch.manual_seed(0)
    model = make()
    opt = _optimizer(kind, model)
    g = torch.Generator().manual_seed(1)
    data = [torch.randint(0, vocab, (batch, length + 1), generator=g) for _ in range(steps)]
    loss_fn = nn.CrossEntropyLoss()
    i = 0

    def step() -> float:
        nonlocal i
        tokens = data[i % len(data)]
        i += 1
        opt.zero_grad()
        logits = model(tokens[:, :-1])
        loss = loss_fn(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        return float(loss.detach())

    return Workload(name, model, opt, step)


def _transformer(kind: str, steps: int) -> Workload:
    return _language_model("transformer", TinyTransformer, kind, steps, VOCAB, 16, 32)


def _lstm(kind: str, steps: int) -> Workload:
    torch.manual_seed(0)
    model = TinyLSTM()
    opt = _optimizer(kind, model)
    g = torch.Generator().manual_seed(1)
    stream = torch.randint(0, VOCAB, (35 * steps + 1, 16), generator=g)  # (time, batch)
    loss_fn = nn.CrossEntropyLoss()
    state: tuple[torch.Tensor, torch.Tensor] | None = None
    i = 0

    def step() -> float:
        nonlocal i, state
        start = 35 * (i % steps)
        i += 1
        chunk, target = stream[start : start + 35], stream[start + 1 : start + 36]
        if state is not None:
            state = (state[0].detach(), state[1].detach())  # truncated BPTT: cut the graph between chunks
        opt.zero_grad()
        logits, state = model(chunk, state)
        loss = loss_fn(logits.reshape(-1, VOCAB), target.reshape(-1))
        loss.backward()
        opt.step()
        return float(loss.detach())

    return Workload("lstm", model, opt, step)


def _resnet18(kind: str, steps: int) -> Workload:
    return _classifier("resnet18", ResNet18, kind, steps, 8, 64)


def _lm6(kind: str, steps: int) -> Workload:
    return _language_model("lm6", TransformerLM, kind, steps, LM_VOCAB, 8, 64)


WORKLOADS: dict[str, Callable[[str, int], Workload]] = {
    "cnn": _cnn,
    "transformer": _transformer,
    "lstm": _lstm,
    "resnet18": _resnet18,
    "lm6": _lm6,
}
OPTIMIZERS = ("SGD", "Adam")


def build(name: str, optimizer: str, steps: int) -> Workload:
    """A fresh, seeded workload with ``steps`` batches of data."""
    return WORKLOADS[name](optimizer, steps)
