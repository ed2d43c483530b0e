"""Lofi music generation: training the lofi2lofi VAE on chord and melody sequences.

Reduced from https://github.com/jacbz/Lofi/issues/14: the author runs the repository's
`lofi2lofi_train.py` on CPU: a VAE encodes a song's chords, melody, tempo, key, mode, valence and
energy, and decodes them again; one AdamW trains the whole model. Each epoch trains, validates
under no_grad, prints the epoch's losses and accuracies and plots the loss and accuracy curves so far
(the figure is replaced here by the arrays matplotlib would build from those lists).
"""

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)

CHORD_VOCAB = 12
NOTE_VOCAB = 24
NOTES_PER_CHORD = 4
MAX_CHORDS = 6
HIDDEN = 32
LATENT = 16
BATCH_SIZE = 8
TRAIN_VALIDATION_SPLIT = 0.67
LEARNING_RATE = 1e-3
WEIGHT_DECAY = 1e-5
MELODY_EPOCH_DELAY = 1
EPOCHS = 3


class Lofi2LofiDataset(Dataset):
    def __init__(self, n_songs=24):
        self.num_chords = torch.randint(3, MAX_CHORDS, (n_songs,))
        self.chords = torch.randint(0, CHORD_VOCAB, (n_songs, MAX_CHORDS))
        self.melody_notes = torch.randint(0, NOTE_VOCAB, (n_songs, MAX_CHORDS * NOTES_PER_CHORD))
        self.tempo = torch.rand(n_songs)
        self.key = torch.randint(0, 12, (n_songs,))
        self.mode = torch.randint(0, 7, (n_songs,))
        self.valence = torch.rand(n_songs)
        self.energy = torch.rand(n_songs)

    def __len__(self):
        return len(self.chords)

    def __getitem__(self, i):
        return {
            "num_chords": self.num_chords[i],
            "chords": self.chords[i],
            "melody_notes": self.melody_notes[i],
            "tempo": self.tempo[i],
            "key": self.key[i],
            "mode": self.mode[i],
            "valence": self.valence[i],
            "energy": self.energy[i],
        }


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.chord_embeddings = nn.Embedding(CHORD_VOCAB, HIDDEN)
        self.melody_embeddings = nn.Embedding(NOTE_VOCAB, HIDDEN)
        self.chords_lstm = nn.GRU(HIDDEN, HIDDEN, batch_first=True)
        self.melody_lstm = nn.GRU(HIDDEN, HIDDEN, batch_first=True)
        self.key_embedding = nn.Embedding(12, 8)
        self.mode_embedding = nn.Embedding(7, 8)
        self.mean = nn.Linear(2 * HIDDEN + 16 + 3, LATENT)
        self.logvar = nn.Linear(2 * HIDDEN + 16 + 3, LATENT)

    def forward(self, chords, notes, tempo, key, mode, valence, energy):
        _, h_chords = self.chords_lstm(self.chord_embeddings(chords))
        _, h_melody = self.melody_lstm(self.melody_embeddings(notes))
        features = torch.cat(
            [h_chords[0], h_melody[0], self.key_embedding(key), self.mode_embedding(mode),
             tempo[:, None], valence[:, None], energy[:, None]], dim=1)
        return self.mean(features), self.logvar(features)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.chords_lstm = nn.GRU(LATENT, HIDDEN, batch_first=True)
        self.chord_prediction = nn.Linear(HIDDEN, CHORD_VOCAB)
        self.melody_lstm = nn.GRU(HIDDEN, HIDDEN, batch_first=True)
        self.melody_prediction = nn.Linear(HIDDEN, NOTE_VOCAB)
        self.tempo = nn.Linear(LATENT, 1)
        self.key = nn.Linear(LATENT, 12)
        self.mode = nn.Linear(LATENT, 7)
        self.valence = nn.Linear(LATENT, 1)
        self.energy = nn.Linear(LATENT, 1)

    def forward(self, z, max_num_chords):
        chord_states, _ = self.chords_lstm(z[:, None, :].expand(-1, max_num_chords, -1))
        pred_chords = self.chord_prediction(chord_states)
        melody_in = chord_states.repeat_interleave(NOTES_PER_CHORD, dim=1)
        melody_states, _ = self.melody_lstm(melody_in)
        pred_notes = self.melody_prediction(melody_states)
        return (pred_chords, pred_notes, torch.sigmoid(self.tempo(z)), self.key(z), self.mode(z),
                torch.sigmoid(self.valence(z)), torch.sigmoid(self.energy(z)))


class Lofi2LofiModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.decoder = Decoder()

    def forward(self, chords, notes, tempo, key, mode, valence, energy, num_chords, max_num_chords):
        mu, log_var = self.encoder(chords, notes, tempo, key, mode, valence, energy)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * log_var)
        kl = -0.5 * torch.mean(1 + log_var - mu.pow(2) - log_var.exp())
        return (*self.decoder(z, max_num_chords), kl)


def plot_history(epochs, series):
    # matplotlib's plot() turns every list it is given into an array first
    for title, (train_values, val_values) in series.items():
        xs = np.asarray(epochs)
        train_curve = np.asarray(train_values, dtype=float)
        val_curve = np.asarray(val_values, dtype=float)
        print(f"  [{title}] epochs {xs.tolist()}: train {train_curve.round(3).tolist()}, val {val_curve.round(3).tolist()}")


def train(dataset, model, name):
    device = "cpu"
    train_size = int(TRAIN_VALIDATION_SPLIT * len(dataset))
    val_size = len(dataset) - train_size
    train_dataset, val_dataset = torch.utils.data.random_split(dataset, [train_size, val_size])
    train_dataloader = DataLoader(train_dataset, batch_size=BATCH_SIZE, shuffle=True)
    val_dataloader = DataLoader(val_dataset, batch_size=BATCH_SIZE, shuffle=False)

    ce_loss = nn.CrossEntropyLoss(reduction="none")
    l1_loss = nn.L1Loss(reduction="mean")
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY)

    epochs = []
    train_losses_chords, train_losses_melodies, train_accs_chords = [], [], []
    val_losses_chords, val_losses_melodies, val_accs_chords = [], [], []

    def compute_loss(data):
        num_chords = data["num_chords"]
        max_num_chords = int(num_chords.max())
        max_num_notes = max_num_chords * NOTES_PER_CHORD
        chords_gt = data["chords"][:, :max_num_chords]
        notes_gt = data["melody_notes"][:, :max_num_notes]

        pred_chords, pred_notes, pred_tempo, pred_key, pred_mode, pred_valence, pred_energy, kl = model(
            chords_gt, notes_gt, data["tempo"], data["key"], data["mode"], data["valence"], data["energy"],
            num_chords, max_num_chords)

        def compute_mask(max_length, curr_length):
            arange = torch.arange(max_length, device=device).repeat((chords_gt.shape[0], 1))
            return arange <= curr_length[:, None]

        loss_chords = ce_loss(pred_chords.permute(0, 2, 1), chords_gt)
        mask_chord = compute_mask(max_num_chords, num_chords)
        loss_chords = torch.masked_select(loss_chords, mask_chord).mean()

        loss_melody_notes = ce_loss(pred_notes.permute(0, 2, 1), notes_gt)
        mask_melody = compute_mask(max_num_notes, num_chords * NOTES_PER_CHORD)
        loss_melody = torch.masked_select(loss_melody_notes, mask_melody).mean()
        if epoch < MELODY_EPOCH_DELAY:
            loss_melody = 0

        loss_tempo = l1_loss(pred_tempo[:, 0], data["tempo"]) / 5
        loss_key = ce_loss(pred_key, data["key"]).mean() / 30
        loss_mode = ce_loss(pred_mode, data["mode"]).mean() / 10
        loss_valence = l1_loss(pred_valence[:, 0], data["valence"]) / 5
        loss_energy = l1_loss(pred_energy[:, 0], data["energy"]) / 5
        loss_total = loss_chords + kl + loss_melody + loss_tempo + loss_key + loss_mode + loss_energy + loss_valence

        tp_chords = torch.masked_select(pred_chords.argmax(dim=2) == chords_gt, mask_chord).tolist()
        return loss_total, loss_chords, kl, loss_melody, tp_chords

    for epoch in range(EPOCHS):
        epochs.append(epoch)
        ep_train_losses_chords, ep_train_losses_melodies, ep_train_tp_chords = [], [], []
        ep_val_losses_chords, ep_val_losses_melodies, ep_val_tp_chords = [], [], []

        model.train()
        for batch, data in enumerate(train_dataloader):
            loss, loss_chords, kl_loss, loss_melody, batch_tp_chords = compute_loss(data)
            ep_train_losses_chords.append(loss_chords)
            ep_train_losses_melodies.append(loss_melody)
            ep_train_tp_chords.extend(batch_tp_chords)

            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss = loss.item()
            print(f"\tBatch {batch}:\tLoss {loss:.3f} (C: {loss_chords:.3f} + KL: {kl_loss:.3f} + M: {loss_melody:.3f})")

        model.eval()
        for batch, data in enumerate(val_dataloader):
            with torch.no_grad():
                loss, loss_chords, kl_loss, loss_melody, batch_tp_chords = compute_loss(data)
                ep_val_losses_chords.append(loss_chords)
                ep_val_losses_melodies.append(loss_melody)
                ep_val_tp_chords.extend(batch_tp_chords)

        ep_train_loss_chord = sum(ep_train_losses_chords) / len(ep_train_losses_chords)
        ep_train_loss_melody = sum(ep_train_losses_melodies) / len(ep_train_losses_melodies)
        ep_train_chord_acc = (sum(ep_train_tp_chords) / len(ep_train_tp_chords)) * 100
        ep_val_loss_chord = sum(ep_val_losses_chords) / len(ep_val_losses_chords)
        ep_val_loss_melody = sum(ep_val_losses_melodies) / len(ep_val_losses_melodies)
        ep_val_chord_acc = (sum(ep_val_tp_chords) / len(ep_val_tp_chords)) * 100
        print(f"Epoch chord loss: {ep_train_loss_chord:.3f}, melody loss: {ep_train_loss_melody:.3f}, "
              f"chord accuracy: {ep_train_chord_acc:.3f}")
        print(f"VALIDATION: epoch chord loss: {ep_val_loss_chord:.3f}, melody loss: {ep_val_loss_melody:.3f}, "
              f"chord accuracy: {ep_val_chord_acc:.3f}")

        train_losses_chords.append(ep_train_loss_chord)
        train_losses_melodies.append(ep_train_loss_melody)
        train_accs_chords.append(ep_train_chord_acc)
        val_losses_chords.append(ep_val_loss_chord)
        val_losses_melodies.append(ep_val_loss_melody)
        val_accs_chords.append(ep_val_chord_acc)

        plot_history(epochs, {
            "Chords loss": (train_losses_chords, val_losses_chords),
            "Chords accuracy": (train_accs_chords, val_accs_chords),
            "Melody loss": (train_losses_melodies, val_losses_melodies),
        })


if __name__ == "__main__":
    dataset = Lofi2LofiDataset()
    model = Lofi2LofiModel()
    train(dataset, model, "lofi2lofi")
