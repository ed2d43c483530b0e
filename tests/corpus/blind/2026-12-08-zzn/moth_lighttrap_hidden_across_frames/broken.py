"""Moth light-trap video detector: a bottleneck ConvLSTM carried across frames.

Reduced from vikrant7/mobile-vod-bottleneck-lstm issue #25, "Runtime error of inplace operation"
(https://github.com/vikrant7/mobile-vod-bottleneck-lstm/issues/25).

The author was training the repository's MobileVOD detector (MobileNet encoder, SSD-style decoder
with Bottleneck-LSTM layers whose hidden and cell states live on the modules) on ImageNet-VID
clips with train_mvod_lstm5.py. For every frame of a clip the script runs the net, calls
``loss.backward(retain_graph=True)`` and ``optimizer.step()`` (RMSprop over two parameter groups,
encoder and decoder), and only calls ``net.detach_hidden()`` after the whole clip. Training stopped
with "RuntimeError: one of the variables needed for gradient computation has been modified by an
inplace operation", raised inside a convolution's backward. The answer in the thread (hebangwen)
explains that the hidden state is not detached between frames, so the second frame's backward runs
back into the first frame's graph, whose saved convolution weights the optimizer step has since
updated in place; the fix is to call ``net.detach_hidden()`` inside the per-frame loop, right after
the step.

Reduction: the setting is a light-trap camera filmed at night, insects detected on a 4x4 grid of
cells (background, moth, beetle) with box offsets per cell. A small conv encoder feeds a decoder
holding one bottleneck ConvLSTM cell whose state is kept on ``self``; a MultiboxLoss-like criterion
returns a regression and a classification loss. The training function mirrors the report's:
clips from a loader, a per-frame zero_grad / forward / backward(retain_graph=True) / step, and
``detach_hidden()`` only once per clip.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(25)

HPARAMS = {
    "num_classes": 3,          # background, moth, beetle
    "grid": 4,
    "image_size": 16,
    "sequence_length": 4,
    "batch_size": 2,
    "num_clips": 3,
    "num_epochs": 2,
    "lr": 3e-3,
    "momentum": 0.9,
    "weight_decay": 5e-4,
}


class TrapEncoder(nn.Module):
    """MobileNet-like front end: depthwise-separable blocks down to a 4x4 map."""

    def __init__(self, width=16):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, stride=2, padding=1)
        self.dw = nn.Conv2d(width, width, 3, stride=2, padding=1, groups=width)
        self.pw = nn.Conv2d(width, width * 2, 1)

    def forward(self, x):
        x = F.relu(self.stem(x))
        x = F.relu(self.dw(x))
        return F.relu(self.pw(x))


class BottleneckLSTMCell(nn.Module):
    """Bottleneck ConvLSTM: the state is kept on the module between frames."""

    def __init__(self, in_ch, hidden_ch, batch_size, grid):
        super().__init__()
        self.bottleneck = nn.Conv2d(in_ch + hidden_ch, hidden_ch, 3, padding=1)
        self.gates = nn.Conv2d(hidden_ch, 4 * hidden_ch, 3, padding=1)
        self.hidden_state = torch.zeros(batch_size, hidden_ch, grid, grid)
        self.cell_state = torch.zeros(batch_size, hidden_ch, grid, grid)

    def forward(self, x):
        b = F.relu(self.bottleneck(torch.cat([x, self.hidden_state], dim=1)))
        i, f, o, g = self.gates(b).chunk(4, dim=1)
        c = torch.sigmoid(f) * self.cell_state + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        self.hidden_state, self.cell_state = h, c
        return h

    def detach_hidden(self):
        self.hidden_state = self.hidden_state.detach()
        self.cell_state = self.cell_state.detach()


class TrapDecoder(nn.Module):
    def __init__(self, num_classes, batch_size, grid, in_ch=32, hidden_ch=16):
        super().__init__()
        self.bottleneck_lstm1 = BottleneckLSTMCell(in_ch, hidden_ch, batch_size, grid)
        self.conf_head = nn.Conv2d(hidden_ch, num_classes, 1)
        self.loc_head = nn.Conv2d(hidden_ch, 4, 1)

    def forward(self, feats):
        h = self.bottleneck_lstm1(feats)
        confidence = self.conf_head(h).flatten(2).transpose(1, 2)   # [B, cells, classes]
        locations = self.loc_head(h).flatten(2).transpose(1, 2)     # [B, cells, 4]
        return confidence, locations


class MothVOD(nn.Module):
    def __init__(self, pred_enc, pred_dec):
        super().__init__()
        self.pred_encoder = pred_enc
        self.pred_decoder = pred_dec

    def forward(self, image):
        return self.pred_decoder(self.pred_encoder(image))

    def detach_hidden(self):
        self.pred_decoder.bottleneck_lstm1.detach_hidden()


class MultiboxLoss(nn.Module):
    def forward(self, confidence, locations, labels, boxes):
        classification_loss = F.cross_entropy(confidence.reshape(-1, confidence.size(-1)), labels.reshape(-1))
        pos = labels > 0
        if pos.any():
            regression_loss = F.smooth_l1_loss(locations[pos], boxes[pos])
        else:
            regression_loss = locations.sum() * 0.0
        return regression_loss, classification_loss


def make_clips(n_clips, seq_len, batch_size, grid, image_size, num_classes):
    clips = []
    cells = grid * grid
    for _ in range(n_clips):
        images = torch.rand(seq_len, batch_size, 3, image_size, image_size)
        labels = torch.randint(0, num_classes, (seq_len, batch_size, cells))
        boxes = torch.randn(seq_len, batch_size, cells, 4) * 0.1
        clips.append((images, boxes, labels))
    return clips


def train(loader, net, criterion, optimizer, epoch):
    net.train(True)
    running_loss = 0.0
    for i, data in enumerate(loader):
        images, boxes, labels = data
        for image, box, label in zip(images, boxes, labels):
            optimizer.zero_grad()
            confidence, locations = net(image)
            regression_loss, classification_loss = criterion(confidence, locations, label, box)
            loss = regression_loss + classification_loss
            loss.backward(retain_graph=True)
            optimizer.step()
            running_loss += loss.item()
        net.detach_hidden()
    print(f"epoch {epoch} mean frame loss {running_loss / max(1, len(loader) * HPARAMS['sequence_length']):.4f}")
    net.detach_hidden()


def main():
    hp = HPARAMS
    loader = make_clips(hp["num_clips"], hp["sequence_length"], hp["batch_size"], hp["grid"],
                        hp["image_size"], hp["num_classes"])
    pred_enc = TrapEncoder()
    pred_dec = TrapDecoder(hp["num_classes"], hp["batch_size"], hp["grid"])
    net = MothVOD(pred_enc, pred_dec)
    criterion = MultiboxLoss()
    optimizer = torch.optim.RMSprop(
        [{"params": [p for _, p in net.pred_encoder.named_parameters()], "lr": hp["lr"]},
         {"params": [p for _, p in net.pred_decoder.named_parameters()], "lr": hp["lr"]}],
        lr=hp["lr"], momentum=hp["momentum"], weight_decay=hp["weight_decay"])
    for epoch in range(hp["num_epochs"]):
        train(loader, net, criterion, optimizer, epoch)


if __name__ == "__main__":
    main()
