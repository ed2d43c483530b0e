"""Track-skip prediction on autoencoder codes, corrected: the training set is encoded once under torch.no_grad().

Source: "Understanding PyTorch's RuntimeError: Backward Through the Graph a Second Time"
(https://devgem.io/posts/understanding-pytorch-s-runtimeerror-backward-through-the-graph-a-second-time),
a write-up of a user's question with its resolution.

The user first trains an autoencoder, then trains a second model on the autoencoder's
codes. The features are encoded once, outside the training loop,

    X_train_encoded, loss = autoencoder(X_train_tensor)

and the second model is trained by slicing mini-batches out of that tensor
(`out, loss, accuracy = model(X[start_ix:end_ix], y[start_ix:end_ix])`, then
`optimizer.zero_grad(); loss.backward(); optimizer.step()`). Although `backward()` is
called once per iteration, the second iteration raises "Trying to backward through the
graph a second time (or directly access saved tensors after they have already been
freed)". The resolution: every slice hangs on the one graph of the autoencoder's forward,
which the first backward frees; the encoding is meant as fixed input features, so it has
to be computed under `torch.no_grad()` (with the autoencoder in eval mode).

Reduction: music recommendation. Stage 1 trains a track-feature autoencoder on synthetic
audio descriptors (tempo, energy, valence, ... plus listener context); stage 2 trains a
skip/listen classifier on the 8-d codes with its own Adam optimizer, slicing batches from
the codes encoded once before the loop; as the resolution says, that encoding runs under
`torch.no_grad()`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

HPARAMS = {
    "n_tracks": 192,
    "feat_dim": 24,
    "code_dim": 8,
    "ae_epochs": 1,
    "ae_batch_size": 96,
    "clf_iters": 2,
    "batch_size": 48,
    "lr_ae": 1e-3,
    "lr_clf": 1e-3,
}


def make_listening_log(n, feat_dim):
    """Synthetic track descriptors and whether the listener skipped the track."""
    feats = torch.randn(n, feat_dim)
    taste = torch.randn(feat_dim)
    skipped = (feats @ taste + 0.5 * torch.randn(n) < 0).long()
    return feats, skipped


class TrackAutoencoder(nn.Module):
    def __init__(self, feat_dim, code_dim):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(feat_dim, 32), nn.ReLU(), nn.Linear(32, code_dim))
        self.decoder = nn.Sequential(nn.Linear(code_dim, 32), nn.ReLU(), nn.Linear(32, feat_dim))

    def forward(self, x):
        code = self.encoder(x)
        recon = self.decoder(code)
        return code, F.mse_loss(recon, x)


class SkipClassifier(nn.Module):
    def __init__(self, code_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(code_dim, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, codes, targets):
        out = self.net(codes)
        loss = F.cross_entropy(out, targets)
        accuracy = (out.argmax(1) == targets).float().mean()
        return out, loss, accuracy


def train_autoencoder(autoencoder, X, hp):
    ae_optimizer = torch.optim.Adam(autoencoder.parameters(), lr=hp["lr_ae"])
    for epoch in range(hp["ae_epochs"]):
        for start in range(0, len(X), hp["ae_batch_size"]):
            _, recon_loss = autoencoder(X[start:start + hp["ae_batch_size"]])
            ae_optimizer.zero_grad()
            recon_loss.backward()
            ae_optimizer.step()
        print(f"autoencoder epoch {epoch} recon {recon_loss.item():.4f}")


def main():
    torch.manual_seed(5)
    hp = HPARAMS
    X_train_tensor, y_train_tensor = make_listening_log(hp["n_tracks"], hp["feat_dim"])

    autoencoder = TrackAutoencoder(hp["feat_dim"], hp["code_dim"])
    train_autoencoder(autoencoder, X_train_tensor, hp)

    autoencoder.eval()
    with torch.no_grad():   # the codes are fixed input features for the classifier
        X_train_encoded, _ = autoencoder(X_train_tensor)

    model = SkipClassifier(hp["code_dim"])
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr_clf"])
    batch_size = hp["batch_size"]
    for it in range(hp["clf_iters"]):
        start_ix = 0
        while start_ix < len(X_train_encoded):
            end_ix = min(start_ix + batch_size, len(X_train_encoded))
            out, loss, accuracy = model(X_train_encoded[start_ix:end_ix], y_train_tensor[start_ix:end_ix])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            start_ix = end_ix
        print(f"classifier iter {it} loss {loss.item():.4f} acc {accuracy.item():.3f}")


if __name__ == "__main__":
    main()
