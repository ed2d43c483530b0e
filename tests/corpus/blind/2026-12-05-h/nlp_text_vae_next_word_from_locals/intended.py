"""Toward controlled generation of text (Hu et al. 2017): an LSTM text VAE whose decoder
is conditioned on an attribute code c, with a CNN attribute discriminator.

Reduced from https://github.com/GBLin5566/toward-controlled-generation-of-text-pytorch/issues/8
(train.py, `train_vae_with_attr_loss`): the encoder's hidden state and the one-hot
attribute are concatenated into the decoder's initial state; the decoder generates the
sentence word by word from a BOS one-hot, feeding its low-temperature softmax back as
the next input; reconstruction cross-entropy plus the KL term train the encoder and the
decoder with one Adam (`vae_opt`); the attribute losses on the generated sentence are
computed for logging. Synthetic token ids and binary sentiment labels.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)

BOS = 1
max_features, maxlen, c_dim = 30, 8, 2
emb_dim, hidden_dim = 16, 24
batch_size, epoch = 4, 2
lambda_c, lambda_z = 0.1, 0.1

x_train = torch.randint(2, max_features, (16, maxlen))
x_train[:, 0] = BOS
y_train = torch.randint(0, c_dim, (16,))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(max_features, emb_dim)
        self.lstm = nn.LSTM(emb_dim, hidden_dim, batch_first=True)
        self.mean_fc = nn.Linear(hidden_dim, hidden_dim)
        self.sigma_fc = nn.Linear(hidden_dim, hidden_dim)

    def init_hidden(self, n):
        return (torch.zeros(1, n, hidden_dim), torch.zeros(1, n, hidden_dim))

    def forward(self, x, hidden, dont_pass_emb=False):
        emb = x if dont_pass_emb else self.embedding(x)
        _, (h, c) = self.lstm(emb, hidden)
        self.z_mean = self.mean_fc(h[0])
        self.z_sigma = self.sigma_fc(h[0])
        z = self.z_mean + torch.exp(0.5 * self.z_sigma) * torch.randn_like(self.z_mean)
        return (z.unsqueeze(0), c)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(max_features, emb_dim)
        self.cell = nn.LSTMCell(emb_dim, hidden_dim + c_dim)
        self.out = nn.Linear(hidden_dim + c_dim, max_features)

    def init_hidden_c_for_lstm(self, n):
        return torch.zeros(1, n, hidden_dim)

    def one_hot_to_word_emb(self, one_hot):
        return one_hot @ self.embedding.weight

    def forward(self, word, hidden, low_temp=False, one_hot_input=False):
        emb = self.one_hot_to_word_emb(word) if one_hot_input else self.embedding(word)
        h, c = self.cell(emb, (hidden[0][0], hidden[1][0]))
        pre_soft = self.out(h)
        output = F.softmax(pre_soft / (0.1 if low_temp else 1.0), dim=-1)
        return output, (h.unsqueeze(0), c.unsqueeze(0)), pre_soft


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(max_features, emb_dim)
        self.conv = nn.Conv1d(emb_dim, 8, 3)
        self.fc = nn.Linear(8, c_dim)

    def forward(self, x, dont_pass_emb=False):
        emb = x @ self.embedding.weight if dont_pass_emb else self.embedding(x)
        h = F.relu(self.conv(emb.transpose(1, 2))).max(-1).values
        return self.fc(h)


def latent_loss(z_mean, z_sigma):
    return -0.5 * torch.mean(1 + z_sigma - z_mean.pow(2) - z_sigma.exp())


def get_batch_label(x, y, index, size):
    return x[index : index + size], y[index : index + size]


encoder, decoder, discriminator = Encoder(), Decoder(), Discriminator()
criterion = nn.CrossEntropyLoss()
vae_opt = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()), lr=1e-3)


def train_vae_with_attr_loss(encoder, decoder, discriminator):
    for epoch_index in range(epoch):
        for batch, index in enumerate(range(0, len(x_train) - 1, batch_size)):
            encoder.zero_grad()
            decoder.zero_grad()
            vae_loss = 0
            next_word = None

            input_data, output_data = get_batch_label(x_train, y_train, index, batch_size)

            enc_hidden = encoder.init_hidden(len(input_data))
            enc_hidden = encoder(input_data, enc_hidden)

            target = output_data.numpy().reshape(-1)
            var_c = torch.from_numpy(np.eye(c_dim)[target]).float()
            cat_hidden = (
                torch.cat([enc_hidden[0][0], var_c], dim=1).unsqueeze(0),
                torch.cat([decoder.init_hidden_c_for_lstm(len(input_data))[0], var_c], dim=1).unsqueeze(0),
            )

            batch_init_word = np.zeros((batch_size, max_features))
            batch_init_word[np.arange(batch_size), BOS] = 1
            batch_init_word = torch.from_numpy(batch_init_word).float()

            input_data = input_data.permute(1, 0)
            for index in range(maxlen - 1):
                if next_word is not None:
                    word = next_word.squeeze(1)
                    output, cat_hidden, pre_soft = decoder(word, cat_hidden, low_temp=True, one_hot_input=True)
                else:
                    word = batch_init_word
                    output, cat_hidden, pre_soft = decoder(word, cat_hidden, low_temp=True, one_hot_input=True)
                next_word = output
                correct_word = input_data[index + 1]
                vae_loss += criterion(pre_soft.view(-1, max_features), correct_word)
                if len(batch_init_word.size()) == 2:
                    batch_init_word = batch_init_word.unsqueeze(1)
                if len(next_word.size()) == 2:
                    next_word = next_word.unsqueeze(1)
                batch_init_word = torch.cat([batch_init_word, next_word], dim=1)
            # latent loss
            ll = latent_loss(encoder.z_mean, encoder.z_sigma)
            # L_attr_c loss
            generated_sentence = batch_init_word
            discriminator.eval()
            logit = discriminator(generated_sentence, dont_pass_emb=True)
            l_attr_c = criterion(logit, output_data)
            # L_attr_z loss
            encoder.eval()
            generated_sentence = decoder.one_hot_to_word_emb(generated_sentence)
            encoded_gen = encoder.init_hidden(len(generated_sentence))
            encoded_gen = encoder(generated_sentence, encoded_gen, dont_pass_emb=True)
            l_attr_z = latent_loss(encoder.z_mean, encoder.z_sigma)

            avg_loss = vae_loss.item() / maxlen

            total_vae_loss = vae_loss + ll
            extra_decoder_loss = lambda_c * l_attr_c + lambda_z * l_attr_z
            total_vae_loss.backward()
            vae_opt.step()

            print(f"[Attr] epoch {epoch_index} batch {batch}: language {avg_loss:.4f}, latent {ll.item():.4f}")


train_vae_with_attr_loss(encoder, decoder, discriminator)
