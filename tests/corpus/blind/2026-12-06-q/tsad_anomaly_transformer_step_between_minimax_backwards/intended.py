"""Anomaly Transformer on multivariate sensor windows (unsupervised time-series anomaly detection).

Reduced from https://github.com/thuml/Anomaly-Transformer/issues/1: the author trains the official
Anomaly Transformer (anomaly attention with a learnable Gaussian prior association and a softmax
series association) with its minimax strategy: a reconstruction loss minus the association
discrepancy (`loss1`, the prior branch stopped) and the reconstruction loss plus the discrepancy
(`loss2`, the series branch stopped), both from one forward, inside the repository's `Solver.train`.
Synthetic sensor windows stand in for SMD/MSL.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

WIN_SIZE = 16
ENC_IN = 5
D_MODEL = 16
N_HEADS = 2
E_LAYERS = 2
BATCH_SIZE = 8
K = 3.0


class AnomalyAttention(nn.Module):
    def __init__(self, win_size, scale=None):
        super().__init__()
        self.scale = scale
        idx = torch.arange(win_size, dtype=torch.float32)
        self.register_buffer("distances", (idx.view(-1, 1) - idx.view(1, -1)).abs())

    def forward(self, queries, keys, values, sigma):
        B, L, H, E = queries.shape
        scale = self.scale or 1.0 / math.sqrt(E)
        scores = torch.einsum("blhe,bshe->bhls", queries, keys)
        attn = scale * scores

        sigma = sigma.transpose(1, 2)  # B H L
        sigma = torch.sigmoid(sigma * 5) + 1e-5
        sigma = torch.pow(3, sigma) - 1
        sigma = sigma.unsqueeze(-1).repeat(1, 1, 1, L)  # B H L L
        prior = self.distances.unsqueeze(0).unsqueeze(0).repeat(B, H, 1, 1)
        prior = 1.0 / (math.sqrt(2 * math.pi) * sigma) * torch.exp(-(prior**2) / 2 / (sigma**2))

        series = torch.softmax(attn, dim=-1)
        V = torch.einsum("bhls,bshd->blhd", series, values)
        return V.contiguous(), series, prior, sigma


class AttentionLayer(nn.Module):
    def __init__(self, attention, d_model, n_heads):
        super().__init__()
        d_keys = d_model // n_heads
        self.inner_attention = attention
        self.query_projection = nn.Linear(d_model, d_keys * n_heads)
        self.key_projection = nn.Linear(d_model, d_keys * n_heads)
        self.value_projection = nn.Linear(d_model, d_keys * n_heads)
        self.sigma_projection = nn.Linear(d_model, n_heads)
        self.out_projection = nn.Linear(d_keys * n_heads, d_model)
        self.n_heads = n_heads

    def forward(self, x):
        B, L, _ = x.shape
        H = self.n_heads
        queries = self.query_projection(x).view(B, L, H, -1)
        keys = self.key_projection(x).view(B, L, H, -1)
        values = self.value_projection(x).view(B, L, H, -1)
        sigma = self.sigma_projection(x).view(B, L, H)
        out, series, prior, sigma = self.inner_attention(queries, keys, values, sigma)
        out = out.view(B, L, -1)
        return self.out_projection(out), series, prior, sigma


class EncoderLayer(nn.Module):
    def __init__(self, attention, d_model, d_ff=None, dropout=0.0):
        super().__init__()
        d_ff = d_ff or 4 * d_model
        self.attention = attention
        self.conv1 = nn.Conv1d(d_model, d_ff, kernel_size=1)
        self.conv2 = nn.Conv1d(d_ff, d_model, kernel_size=1)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        new_x, attn, mask, sigma = self.attention(x)
        x = x + self.dropout(new_x)
        y = x = self.norm1(x)
        y = self.dropout(F.gelu(self.conv1(y.transpose(-1, 1))))
        y = self.dropout(self.conv2(y).transpose(-1, 1))
        return self.norm2(x + y), attn, mask, sigma


class Encoder(nn.Module):
    def __init__(self, attn_layers, norm_layer=None):
        super().__init__()
        self.attn_layers = nn.ModuleList(attn_layers)
        self.norm = norm_layer

    def forward(self, x):
        series_list, prior_list, sigma_list = [], [], []
        for attn_layer in self.attn_layers:
            x, series, prior, sigma = attn_layer(x)
            series_list.append(series)
            prior_list.append(prior)
            sigma_list.append(sigma)
        if self.norm is not None:
            x = self.norm(x)
        return x, series_list, prior_list, sigma_list


class DataEmbedding(nn.Module):
    def __init__(self, c_in, d_model, max_len=512):
        super().__init__()
        self.value_embedding = nn.Conv1d(c_in, d_model, kernel_size=3, padding=1, padding_mode="circular", bias=False)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).float().unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        x = self.value_embedding(x.permute(0, 2, 1)).transpose(1, 2)
        return x + self.pe[:, : x.size(1)]


class AnomalyTransformer(nn.Module):
    def __init__(self, win_size, enc_in, c_out, d_model=512, n_heads=8, e_layers=3, d_ff=512):
        super().__init__()
        self.embedding = DataEmbedding(enc_in, d_model)
        self.encoder = Encoder(
            [
                EncoderLayer(AttentionLayer(AnomalyAttention(win_size), d_model, n_heads), d_model, d_ff)
                for _ in range(e_layers)
            ],
            norm_layer=nn.LayerNorm(d_model),
        )
        self.projection = nn.Linear(d_model, c_out, bias=True)

    def forward(self, x):
        enc_out = self.embedding(x)
        enc_out, series, prior, sigmas = self.encoder(enc_out)
        return self.projection(enc_out), series, prior, sigmas


def my_kl_loss(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.mean(torch.sum(res, dim=-1), dim=1)


def make_windows(n_windows, win_size, channels):
    t = torch.arange(n_windows * win_size, dtype=torch.float32)
    base = torch.stack([torch.sin(t / (3.0 + c)) for c in range(channels)], dim=1)
    series = base + 0.1 * torch.randn(n_windows * win_size, channels)
    return series.view(n_windows, win_size, channels)


class Solver:
    def __init__(self, train_windows):
        self.win_size = WIN_SIZE
        self.k = K
        self.train_windows = train_windows
        self.model = AnomalyTransformer(WIN_SIZE, ENC_IN, ENC_IN, d_model=D_MODEL, n_heads=N_HEADS, e_layers=E_LAYERS, d_ff=D_MODEL)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-4)
        self.criterion = nn.MSELoss()

    def association_losses(self, series, prior):
        series_loss = 0.0
        prior_loss = 0.0
        for u in range(len(prior)):
            norm_prior = prior[u] / torch.unsqueeze(torch.sum(prior[u], dim=-1), dim=-1).repeat(1, 1, 1, self.win_size)
            series_loss += torch.mean(my_kl_loss(series[u], norm_prior.detach())) + torch.mean(
                my_kl_loss(norm_prior.detach(), series[u])
            )
            prior_loss += torch.mean(my_kl_loss(norm_prior, series[u].detach())) + torch.mean(
                my_kl_loss(series[u].detach(), norm_prior)
            )
        return series_loss / len(prior), prior_loss / len(prior)

    def train(self, num_epochs):
        for epoch in range(num_epochs):
            loss1_list = []
            self.model.train()
            for i in range(0, len(self.train_windows), BATCH_SIZE):
                self.optimizer.zero_grad()
                input = self.train_windows[i : i + BATCH_SIZE]

                output, series, prior, _ = self.model(input)
                series_loss, prior_loss = self.association_losses(series, prior)
                rec_loss = self.criterion(output, input)

                loss1_list.append((rec_loss - self.k * series_loss).item())
                loss1 = rec_loss - self.k * series_loss
                loss2 = rec_loss + self.k * prior_loss

                # Minimax strategy
                loss1.backward(retain_graph=True)
                loss2.backward()
                self.optimizer.step()

            print(f"Epoch {epoch + 1}: train loss {sum(loss1_list) / len(loss1_list):.4f}")


if __name__ == "__main__":
    windows = make_windows(32, WIN_SIZE, ENC_IN)
    solver = Solver(windows)
    solver.train(num_epochs=2)
