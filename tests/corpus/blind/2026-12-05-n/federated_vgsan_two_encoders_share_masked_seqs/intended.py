"""Federated cross-domain sequential recommendation (FedDCSR layout, VGSAN model).

Source: https://github.com/orion-orion/FedDCSR/issues/3

Each client holds the item sequences of one domain and trains a variational
self-attention recommender (VGSAN): item and position embeddings, an encoder
with two self-attention stacks (one for mu, one for logvar), the
reparameterisation, and a linear head over the domain's items. The loss is the
next-item cross entropy plus a KL term. Every client trains locally with its
own Adam; after a round the server averages the encoder weights of all clients
(FedAvg) and sends them back. The report hit the error during the first local
epoch. Reduced: two clients, random sequences, one attention block, no item
graph.
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

HIDDEN = 16
HEADS = 2
MAX_LEN = 8
DROPOUT = 0.2
BATCH = 8
LOCAL_EPOCHS = 1
ROUNDS = 2
BETA_KL = 0.1


class PointWiseFeedForward(nn.Module):
    def __init__(self, hidden_units, dropout_rate):
        super().__init__()
        self.conv1 = nn.Conv1d(hidden_units, hidden_units, kernel_size=1)
        self.dropout1 = nn.Dropout(p=dropout_rate)
        self.conv2 = nn.Conv1d(hidden_units, hidden_units, kernel_size=1)
        self.dropout2 = nn.Dropout(p=dropout_rate)

    def forward(self, inputs):
        outputs = F.relu(self.dropout1(self.conv1(inputs.transpose(-1, -2))))
        outputs = self.dropout2(self.conv2(outputs))
        outputs = outputs.transpose(-1, -2)  # back to (N, L, C)
        outputs += inputs
        return outputs


class SelfAttention(nn.Module):
    def __init__(self, num_items, num_blocks=1):
        super().__init__()
        self.num_items = num_items
        self.attention_layernorms = nn.ModuleList()
        self.attention_layers = nn.ModuleList()
        self.forward_layernorms = nn.ModuleList()
        self.forward_layers = nn.ModuleList()
        self.last_layernorm = nn.LayerNorm(HIDDEN, eps=1e-8)
        for _ in range(num_blocks):
            self.attention_layernorms.append(nn.LayerNorm(HIDDEN, eps=1e-8))
            self.attention_layers.append(nn.MultiheadAttention(HIDDEN, HEADS, DROPOUT))
            self.forward_layernorms.append(nn.LayerNorm(HIDDEN, eps=1e-8))
            self.forward_layers.append(PointWiseFeedForward(HIDDEN, DROPOUT))

    def forward(self, seqs, seqs_data):
        timeline_mask = seqs_data == self.num_items
        seqs = seqs * ~timeline_mask.unsqueeze(-1)  # zero the padded positions

        tl = seqs.shape[1]
        attention_mask = ~torch.tril(torch.ones((tl, tl), dtype=torch.bool))

        for i in range(len(self.attention_layers)):
            seqs = torch.transpose(seqs, 0, 1)
            Q = self.attention_layernorms[i](seqs)
            mha_outputs, _ = self.attention_layers[i](Q, seqs, seqs, attn_mask=attention_mask)
            seqs = Q + mha_outputs
            seqs = torch.transpose(seqs, 0, 1)

            seqs = self.forward_layernorms[i](seqs)
            seqs = self.forward_layers[i](seqs)
            seqs *= ~timeline_mask.unsqueeze(-1)

        return self.last_layernorm(seqs)


class Encoder(nn.Module):
    def __init__(self, num_items):
        super().__init__()
        self.encoder_mu = SelfAttention(num_items)
        self.encoder_logvar = SelfAttention(num_items)

    def forward(self, seqs, seqs_data):
        mu = self.encoder_mu(seqs, seqs_data)
        logvar = self.encoder_logvar(seqs, seqs_data)
        return mu, logvar


class VGSAN(nn.Module):
    def __init__(self, num_items):
        super().__init__()
        self.item_emb = nn.Embedding(num_items + 1, HIDDEN, padding_idx=num_items)
        self.pos_emb = nn.Embedding(MAX_LEN, HIDDEN)
        self.encoder = Encoder(num_items)
        self.linear = nn.Linear(HIDDEN, num_items)
        self.linear_pad = nn.Linear(HIDDEN, 1)
        self.LayerNorm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.dropout = nn.Dropout(0.3)

    def add_position_embedding(self, seqs, seq_embeddings):
        position_ids = torch.arange(seqs.size(1), dtype=torch.long).unsqueeze(0).expand_as(seqs)
        seq_embeddings = seq_embeddings + self.pos_emb(position_ids)
        seq_embeddings = self.LayerNorm(seq_embeddings)
        return self.dropout(seq_embeddings)

    def reparameterization(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        if self.training:
            return mu + std * torch.randn_like(std)
        return mu

    def forward(self, seqs):
        seqs_emb = self.item_emb(seqs) * self.item_emb.embedding_dim**0.5
        seqs_emb = self.add_position_embedding(seqs, seqs_emb)
        mu, logvar = self.encoder(seqs_emb, seqs)
        z = self.reparameterization(mu, logvar)
        result = torch.cat((self.linear(z), self.linear_pad(z)), dim=-1)
        return result, mu, logvar


def kl_divergence(mu, logvar):
    return -0.5 * torch.mean(torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=-1))


def make_domain(num_items, n_users):
    seqs = torch.randint(0, num_items, (n_users, MAX_LEN))
    lengths = torch.randint(3, MAX_LEN + 1, (n_users,))
    for u in range(n_users):
        seqs[u, : MAX_LEN - lengths[u]] = num_items  # left padding
    ground = torch.roll(seqs, shifts=-1, dims=1)
    ground[:, -1] = torch.randint(0, num_items, (n_users,))
    ground[seqs == num_items] = num_items
    return seqs, ground


class Client:
    def __init__(self, cid, num_items, n_users):
        self.cid = cid
        self.num_items = num_items
        self.seqs, self.ground = make_domain(num_items, n_users)
        self.model = VGSAN(num_items)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)

    def train_epoch(self):
        self.model.train()
        total = 0.0
        for start in range(0, len(self.seqs), BATCH):
            seq = self.seqs[start : start + BATCH]
            ground = self.ground[start : start + BATCH]
            result, mu, logvar = self.model(seq)
            recons_loss = F.cross_entropy(result.reshape(-1, self.num_items + 1), ground.reshape(-1))
            kld_loss = kl_divergence(mu, logvar)
            loss = recons_loss + BETA_KL * kld_loss
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            total += loss.item()
        return total

    def get_shared(self):
        return copy.deepcopy(self.model.encoder.state_dict())

    def set_shared(self, state):
        self.model.encoder.load_state_dict(state)


class Server:
    def aggregate(self, states, weights):
        avg = {}
        for key in states[0]:
            avg[key] = sum(w * s[key] for s, w in zip(states, weights))
        return avg


def main():
    torch.manual_seed(0)
    clients = [Client(0, num_items=30, n_users=24), Client(1, num_items=20, n_users=16)]
    server = Server()
    n_total = sum(len(c.seqs) for c in clients)
    for rnd in range(ROUNDS):
        for client in clients:
            for _ in range(LOCAL_EPOCHS):
                loss = client.train_epoch()
            print(f"round {rnd} client {client.cid} loss {loss:.4f}")
        shared = server.aggregate([c.get_shared() for c in clients], [len(c.seqs) / n_total for c in clients])
        for client in clients:
            client.set_shared(shared)


if __name__ == "__main__":
    main()
