"""Show-attend-and-tell style captioner: an attention LSTM decoder over precomputed region features,
trained with teacher forcing mixed with scheduled sampling.

Report: https://github.com/lucidrains/denoising-diffusion-pytorch/issues/109 (the example trainer
failed with "Trying to backward through the graph a second time" on its second ``loss.backward()``;
the author found the cause: "I use a conv1D to convert my data to the shape of the network's input,
which is out of the training loop"). The report is a diffusion trainer; the training setting is the
writer's: the author converts the cached CNN region features (channels first) to the decoder's width
with a 1x1 ``nn.Conv1d`` once, before the epoch loop, and then slices mini-batches out of the result.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_IMAGES, N_REGIONS, CNN_DIM = 48, 9, 48
ENC_DIM, EMB_DIM, HID_DIM, ATT_DIM = 32, 24, 48, 32
VOCAB, CAP_LEN = 30, 8
BOS = 1
BATCH = 16
EPOCHS = 2


def make_data():
    raw = torch.randn(N_IMAGES, CNN_DIM, N_REGIONS)  # as the CNN cache stores them
    proj = torch.randn(CNN_DIM, VOCAB)
    scores = raw.mean(2) @ proj
    captions = torch.empty(N_IMAGES, CAP_LEN, dtype=torch.long)
    captions[:, 0] = BOS
    for t in range(1, CAP_LEN):
        captions[:, t] = (scores.argsort(1, descending=True)[:, t] + t) % (VOCAB - 2) + 2
    return raw, captions


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc_att = nn.Linear(ENC_DIM, ATT_DIM)
        self.dec_att = nn.Linear(HID_DIM, ATT_DIM)
        self.full_att = nn.Linear(ATT_DIM, 1)

    def forward(self, feats, h):
        e = self.full_att(torch.tanh(self.enc_att(feats) + self.dec_att(h).unsqueeze(1))).squeeze(2)
        alpha = F.softmax(e, dim=1)
        return (feats * alpha.unsqueeze(2)).sum(1), alpha


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMB_DIM)
        self.attention = Attention()
        self.init_h = nn.Linear(ENC_DIM, HID_DIM)
        self.init_c = nn.Linear(ENC_DIM, HID_DIM)
        self.f_beta = nn.Linear(HID_DIM, ENC_DIM)
        self.cell = nn.LSTMCell(EMB_DIM + ENC_DIM, HID_DIM)
        self.out = nn.Linear(HID_DIM, VOCAB)

    def forward(self, feats, captions, sample_prob):
        mean_feat = feats.mean(1)
        h, c = self.init_h(mean_feat), self.init_c(mean_feat)
        word = captions[:, 0]
        logits, alphas = [], []
        for t in range(1, captions.size(1)):
            context, alpha = self.attention(feats, h)
            context = torch.sigmoid(self.f_beta(h)) * context
            h, c = self.cell(torch.cat([self.embed(word), context], 1), (h, c))
            step_logits = self.out(h)
            logits.append(step_logits)
            alphas.append(alpha)
            use_model = torch.rand(captions.size(0)) < sample_prob
            word = torch.where(use_model, step_logits.argmax(1), captions[:, t])
        return torch.stack(logits, 1), torch.stack(alphas, 1)


def train():
    raw_feats, captions = make_data()
    adapter = nn.Conv1d(CNN_DIM, ENC_DIM, kernel_size=1)
    decoder = Decoder()
    optimizer = torch.optim.Adam(decoder.parameters(), lr=2e-3)

    with torch.no_grad():  # a fixed shape conversion of the cached features, done once
        feats = adapter(raw_feats).transpose(1, 2)  # (images, regions, ENC_DIM)

    step = 0
    for epoch in range(EPOCHS):
        order = torch.randperm(N_IMAGES)
        for start in range(0, N_IMAGES, BATCH):
            idx = order[start:start + BATCH]
            sample_prob = min(0.25, 0.05 * step)
            logits, alphas = decoder(feats[idx], captions[idx], sample_prob)
            ce = F.cross_entropy(logits.reshape(-1, VOCAB), captions[idx, 1:].reshape(-1))
            att_reg = ((1.0 - alphas.sum(1)) ** 2).mean()  # doubly stochastic attention
            loss = ce + 0.5 * att_reg
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
        print(f"epoch {epoch} loss {loss.item():.3f}")


if __name__ == "__main__":
    train()
