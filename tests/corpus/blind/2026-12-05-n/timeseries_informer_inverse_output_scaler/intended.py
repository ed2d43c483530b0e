"""Long-sequence time-series forecasting with an Informer-style encoder-decoder transformer (Informer2020 layout).

Source: https://github.com/zhouhaoyi/Informer2020/issues/82

The author trains Informer on a multivariate series with `--inverse`: the
dataset keeps the targets in their original scale, so in `_process_one_batch`
the model's outputs are mapped back through the dataset's `inverse_transform`
(the scaler fitted on the training split) before the MSE against the raw
targets. The decoder input is the last `label_len` known steps followed by
zeros for the `pred_len` steps to forecast. The report ran on CUDA; this
reduction runs on CPU with a synthetic series, full attention instead of
ProbSparse attention, one encoder and one decoder layer.
"""

import math
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class StandardScaler:
    """Per-column standardisation, fitted on the training split; works on arrays and on tensors."""

    def fit(self, data):
        self.mean_ = data.mean(0)
        self.scale_ = data.std(0)
        return self

    def transform(self, X):
        mean = torch.from_numpy(self.mean_).type_as(X) if torch.is_tensor(X) else self.mean_
        std = torch.from_numpy(self.scale_).type_as(X) if torch.is_tensor(X) else self.scale_
        return (X - mean) / std

    def inverse_transform(self, X):
        mean = torch.from_numpy(self.mean_).type_as(X) if torch.is_tensor(X) else self.mean_
        std = torch.from_numpy(self.scale_).type_as(X) if torch.is_tensor(X) else self.scale_
        return X * std + mean


def make_series(n_steps=200, n_vars=3):
    t = np.arange(n_steps, dtype=np.float32)
    cols = [
        10 + 3 * np.sin(2 * np.pi * t / 24) + 0.5 * np.random.randn(n_steps),
        50 + 0.05 * t + 2 * np.cos(2 * np.pi * t / 48) + np.random.randn(n_steps),
        -5 + 2 * np.sin(2 * np.pi * t / 12) + 0.3 * np.random.randn(n_steps),
    ]
    return np.stack(cols[:n_vars], axis=1).astype(np.float32)


class Dataset_Custom(Dataset):
    def __init__(self, raw, flag="train", size=(48, 24, 12), inverse=False):
        self.seq_len, self.label_len, self.pred_len = size
        self.inverse = inverse
        n = len(raw)
        borders = {"train": (0, int(n * 0.7)), "val": (int(n * 0.7) - self.seq_len, n)}
        b1, b2 = borders[flag]
        self.scaler = StandardScaler().fit(raw[: int(n * 0.7)])
        data = self.scaler.transform(raw).astype(np.float32)
        self.data_x = data[b1:b2]
        self.data_y = raw[b1:b2] if self.inverse else data[b1:b2]
        stamp = np.arange(n, dtype=np.float32)[b1:b2]
        self.data_stamp = np.stack([(stamp % 24) / 23 - 0.5, (stamp // 24 % 7) / 6 - 0.5], axis=1).astype(np.float32)

    def __getitem__(self, index):
        s_begin = index
        s_end = s_begin + self.seq_len
        r_begin = s_end - self.label_len
        r_end = r_begin + self.label_len + self.pred_len
        seq_x = self.data_x[s_begin:s_end]
        if self.inverse:
            seq_y = np.concatenate(
                [self.data_x[r_begin : r_begin + self.label_len], self.data_y[r_begin + self.label_len : r_end]], 0
            )
        else:
            seq_y = self.data_y[r_begin:r_end]
        return seq_x, seq_y, self.data_stamp[s_begin:s_end], self.data_stamp[r_begin:r_end]

    def __len__(self):
        return len(self.data_x) - self.seq_len - self.pred_len + 1

    def inverse_transform(self, data):
        return self.scaler.inverse_transform(data)


class DataEmbedding(nn.Module):
    def __init__(self, c_in, d_model, n_marks=2, dropout=0.05):
        super().__init__()
        self.value_embedding = nn.Conv1d(c_in, d_model, kernel_size=3, padding=1, padding_mode="circular")
        self.temporal_embedding = nn.Linear(n_marks, d_model)
        pe = torch.zeros(512, d_model)
        position = torch.arange(0, 512).float().unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x, x_mark):
        x = self.value_embedding(x.permute(0, 2, 1)).transpose(1, 2)
        return self.dropout(x + self.pe[:, : x.size(1)] + self.temporal_embedding(x_mark))


class Informer(nn.Module):
    def __init__(self, enc_in, dec_in, c_out, out_len, d_model=32, n_heads=4, d_ff=64, dropout=0.05):
        super().__init__()
        self.pred_len = out_len
        self.enc_embedding = DataEmbedding(enc_in, d_model, dropout=dropout)
        self.dec_embedding = DataEmbedding(dec_in, d_model, dropout=dropout)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d_model, n_heads, d_ff, dropout, activation="gelu", batch_first=True), 1
        )
        self.decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(d_model, n_heads, d_ff, dropout, activation="gelu", batch_first=True), 1
        )
        self.projection = nn.Linear(d_model, c_out)

    def forward(self, x_enc, x_mark_enc, x_dec, x_mark_dec):
        enc_out = self.encoder(self.enc_embedding(x_enc, x_mark_enc))
        L = x_dec.size(1)
        causal = torch.triu(torch.full((L, L), float("-inf")), diagonal=1)
        dec_out = self.decoder(self.dec_embedding(x_dec, x_mark_dec), enc_out, tgt_mask=causal)
        return self.projection(dec_out)[:, -self.pred_len :, :]


class Exp_Informer:
    def __init__(self, args):
        self.args = args
        self.raw = make_series()
        self.model = self._build_model()

    def _build_model(self):
        a = self.args
        return Informer(a.enc_in, a.dec_in, a.c_out, a.pred_len, a.d_model, a.n_heads, a.d_ff, a.dropout)

    def _get_data(self, flag):
        a = self.args
        data_set = Dataset_Custom(self.raw, flag=flag, size=(a.seq_len, a.label_len, a.pred_len), inverse=a.inverse)
        data_loader = DataLoader(data_set, batch_size=a.batch_size, shuffle=(flag == "train"), drop_last=True)
        return data_set, data_loader

    def _select_optimizer(self):
        return torch.optim.Adam(self.model.parameters(), lr=self.args.learning_rate)

    def _select_criterion(self):
        return nn.MSELoss()

    def _process_one_batch(self, dataset_object, batch_x, batch_y, batch_x_mark, batch_y_mark):
        batch_x = batch_x.float()
        batch_y = batch_y.float()
        dec_inp = torch.zeros([batch_y.shape[0], self.args.pred_len, batch_y.shape[-1]]).float()
        dec_inp = torch.cat([batch_y[:, : self.args.label_len, :], dec_inp], dim=1).float()
        outputs = self.model(batch_x, batch_x_mark, dec_inp, batch_y_mark)
        if self.args.inverse:
            outputs = dataset_object.inverse_transform(outputs)
        f_dim = -1 if self.args.features == "MS" else 0
        batch_y = batch_y[:, -self.args.pred_len :, f_dim:]
        return outputs, batch_y

    def train(self):
        train_data, train_loader = self._get_data(flag="train")
        model_optim = self._select_optimizer()
        criterion = self._select_criterion()
        for epoch in range(self.args.train_epochs):
            self.model.train()
            train_loss = []
            for i, (batch_x, batch_y, batch_x_mark, batch_y_mark) in enumerate(train_loader):
                model_optim.zero_grad()
                pred, true = self._process_one_batch(train_data, batch_x, batch_y, batch_x_mark, batch_y_mark)
                loss = criterion(pred, true)
                train_loss.append(loss.item())
                loss.backward()
                model_optim.step()
            print(f"Epoch: {epoch + 1} | Train Loss: {np.average(train_loss):.5f}")
        return self.model


def main():
    torch.manual_seed(2021)
    np.random.seed(2021)
    args = SimpleNamespace(
        features="M", seq_len=48, label_len=24, pred_len=12, enc_in=3, dec_in=3, c_out=3,
        d_model=32, n_heads=4, d_ff=64, dropout=0.05, batch_size=16, learning_rate=1e-4,
        train_epochs=1, inverse=True,
    )
    exp = Exp_Informer(args)
    exp.train()


if __name__ == "__main__":
    main()
