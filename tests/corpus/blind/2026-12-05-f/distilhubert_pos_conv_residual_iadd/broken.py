"""Reduced from https://github.com/s3prl/s3prl/issues/369

The author was training DistilHuBERT (s3prl's "distiller" upstream): a small student transformer
on raw waveforms, with a convolutional feature extractor and a convolutional relative positional
embedding, trained to predict several hidden layers of a frozen HuBERT teacher with prediction
heads (L1 plus a log-sigmoid cosine term). loss.backward() raised "one of the variables needed
for gradient computation has been modified by an inplace operation: [torch.cuda.FloatTensor
[12, 768, 499]], which is output 0 of AsStridedBackward0, is at version 3; expected version 2"
(PyTorch 1.11). The author's own answer: in s3prl/upstream/distiller/module.py,
"x = x + x_conv would solve the problem" (the encoder's extract_features did x += x_conv, and
the positional convolution had saved x, transposed, as its input).

Here the same student (smaller), a random frozen teacher standing in for HuBERT, and a
pre-training loop over synthetic waveforms.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

DIM, LAYERS, TEACHER_LAYERS = 32, 2, 4
PRED_LAYERS = [2, 4]  # teacher layers the student's heads predict (DistilHuBERT uses 4, 8, 12)


class ConvFeatureExtractionModel(nn.Module):
    def __init__(self, conv_layers=((32, 10, 5), (32, 3, 2), (32, 3, 2))):
        super().__init__()
        blocks, in_d = [], 1
        for dim, k, stride in conv_layers:
            blocks.append(nn.Sequential(nn.Conv1d(in_d, dim, k, stride=stride, bias=False), nn.GELU()))
            in_d = dim
        self.conv_layers = nn.ModuleList(blocks)

    def forward(self, x):
        x = x.unsqueeze(1)  # B x T -> B x C x T
        for conv in self.conv_layers:
            x = conv(x)
        return x


class SamePad(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.remove = 1 if kernel_size % 2 == 0 else 0

    def forward(self, x):
        if self.remove > 0:
            x = x[:, :, : -self.remove]
        return x


class TransformerEncoder(nn.Module):
    def __init__(self, dim, layers, conv_pos=16, conv_pos_groups=4):
        super().__init__()
        pos_conv = nn.Conv1d(dim, dim, kernel_size=conv_pos, padding=conv_pos // 2, groups=conv_pos_groups)
        nn.init.normal_(pos_conv.weight, mean=0, std=0.05)
        nn.init.constant_(pos_conv.bias, 0)
        pos_conv = nn.utils.parametrizations.weight_norm(pos_conv, name="weight", dim=2)
        self.pos_conv = nn.Sequential(pos_conv, SamePad(conv_pos), nn.GELU())
        self.layers = nn.ModuleList(
            [nn.TransformerEncoderLayer(dim, 4, dim * 2, dropout=0.1, batch_first=True) for _ in range(layers)]
        )
        self.layer_norm = nn.LayerNorm(dim)

    def extract_features(self, x, padding_mask=None, get_hidden=False):
        if padding_mask is not None:
            x[padding_mask] = 0

        x_conv = self.pos_conv(x.transpose(1, 2))
        x_conv = x_conv.transpose(1, 2)
        x += x_conv

        x = self.layer_norm(x)
        hiddens = []
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=padding_mask)
            if get_hidden:
                hiddens.append(x)
        return x, hiddens

    def forward(self, x, padding_mask=None, get_hidden=False):
        return self.extract_features(x, padding_mask, get_hidden)


class DistillerModel(nn.Module):
    def __init__(self, n_tasks):
        super().__init__()
        self.feature_extractor = ConvFeatureExtractionModel()
        self.layer_norm = nn.LayerNorm(32)
        self.post_extract_proj = nn.Linear(32, DIM)
        self.dropout_input = nn.Dropout(0.1)
        self.encoder = TransformerEncoder(DIM, LAYERS)
        self.output_layer = nn.Linear(DIM, DIM * n_tasks)
        self.n_tasks = n_tasks

    def forward(self, wave, pad_mask=None):
        feat = self.feature_extractor(wave).transpose(1, 2)  # B x T x D
        feat = self.layer_norm(feat)
        feat = self.post_extract_proj(feat)
        x = self.dropout_input(feat)
        x, _ = self.encoder(x, pad_mask)
        b, t, _ = x.shape
        pred = self.output_layer(x).reshape(b, t, self.n_tasks, DIM).transpose(1, 2)  # B x N x T x D
        return pred


class Teacher(nn.Module):
    """A frozen stand-in for HuBERT: same front end, deeper, returns every layer's hidden states."""

    def __init__(self):
        super().__init__()
        self.feature_extractor = ConvFeatureExtractionModel()
        self.post_extract_proj = nn.Linear(32, DIM)
        self.encoder = TransformerEncoder(DIM, TEACHER_LAYERS)

    def forward(self, wave):
        x = self.post_extract_proj(self.feature_extractor(wave).transpose(1, 2))
        _, hiddens = self.encoder(x, get_hidden=True)
        return hiddens


class DistillerForPretrain(nn.Module):
    def __init__(self, cosine_loss=1.0):
        super().__init__()
        self.distiller = DistillerModel(len(PRED_LAYERS))
        self.teacher = Teacher()
        self.teacher.eval()
        for p in self.teacher.parameters():
            p.requires_grad = False
        self.cosine_loss = cosine_loss

    def forward(self, wave):
        pred = self.distiller(wave)
        with torch.no_grad():
            hiddens = self.teacher(wave)
            target = torch.stack([hiddens[i - 1] for i in PRED_LAYERS], dim=1)  # B x N x T x D
        rec_loss = F.l1_loss(pred, target)
        sim_loss = -F.logsigmoid(F.cosine_similarity(pred, target, dim=-1)).mean()
        return rec_loss + self.cosine_loss * sim_loss, rec_loss, sim_loss


model = DistillerForPretrain()
optimizer = torch.optim.AdamW(model.distiller.parameters(), lr=2e-4)
waves = torch.randn(8, 4, 1600)  # 8 batches of 4 utterances, 0.1 s at 16 kHz

for epoch in range(2):
    for wave in waves:
        model.distiller.train()
        loss, rec_loss, sim_loss = model(wave)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.distiller.parameters(), 10.0)
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f} (rec {rec_loss.item():.4f}, sim {sim_loss.item():.4f})")
