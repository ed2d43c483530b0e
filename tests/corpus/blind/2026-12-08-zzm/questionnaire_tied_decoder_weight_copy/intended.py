"""Attitude factors from a polling questionnaire with a tied autoencoder: the
decoder's weight is kept equal to the encoder's transpose by copying it in place.

Source: PyTorch forum, "How to create and train a tied autoencoder?"
https://discuss.pytorch.org/t/how-to-create-and-train-a-tied-autoencoder/2585/13

The asker wants the autoencoder of several papers in which the decoder matrix is the
encoder matrix transposed (W_decode = W_encode^T), and asks how two layers can share
one matrix but use it differently. The replies: use the functional interface,
``F.linear(x, W)`` to encode and ``F.linear(y, W.t())`` to decode, so there is one
weight and autograd sees both uses of it (the asker ends with a ``MirrorLinear``
module that registers the encoder's parameter and applies its transpose). The
thread itself is a how-to; the failing attempt in this script is the one the
replies steer away from, and is my reconstruction, not code from the thread:
keeping a second ``nn.Linear`` for the decoder and overwriting its weight with the
encoder's transpose, in place, at every forward. The decoder weight is a leaf that
requires grad, so ``copy_`` raises "a leaf Variable that requires grad is being used
in an in-place operation". The intended script ties the weights as the thread says.

Setting (mine): a polling firm compresses 30 Likert-scale questionnaire items into 6
attitude factors; reconstruction error is the loss, Adam the optimizer.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(23)

HPARAMS = {
    "n_items": 30,
    "n_factors": 6,
    "n_respondents": 192,
    "batch_size": 32,
    "epochs": 2,
    "lr": 5e-3,
}


def make_responses(hp):
    """Likert answers 1..5 driven by a few hidden attitudes, rescaled to [-1, 1]."""
    attitudes = torch.randn(hp["n_respondents"], hp["n_factors"])
    loadings = torch.randn(hp["n_factors"], hp["n_items"]) * 0.8
    raw = attitudes @ loadings + 0.3 * torch.randn(hp["n_respondents"], hp["n_items"])
    likert = torch.clamp(torch.round(raw + 3.0), 1.0, 5.0)
    return (likert - 3.0) / 2.0


class TiedSurveyAutoencoder(nn.Module):
    def __init__(self, n_items, n_factors):
        super().__init__()
        self.encoder = nn.Linear(n_items, n_factors)
        self.decoder = nn.Linear(n_factors, n_items)
        # tied: the decoder uses the encoder's weight, only its own bias is trained
        self.decoder.weight.requires_grad_(False)

    def forward(self, answers):
        factors = torch.tanh(self.encoder(answers))
        # W_dec = W_enc^T through the functional interface, as the thread answers
        return torch.tanh(F.linear(factors, self.encoder.weight.t(), self.decoder.bias))


def main():
    hp = HPARAMS
    responses = make_responses(hp)
    model = TiedSurveyAutoencoder(hp["n_items"], hp["n_factors"])
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"])

    for epoch in range(hp["epochs"]):
        total = 0.0
        for start in range(0, hp["n_respondents"], hp["batch_size"]):
            batch = responses[start:start + hp["batch_size"]]
            optimizer.zero_grad()
            recon_loss = F.mse_loss(model(batch), batch)
            recon_loss.backward()
            optimizer.step()
            total += recon_loss.item() * batch.shape[0]
        print(f"epoch {epoch} reconstruction {total / hp['n_respondents']:.4f}")


if __name__ == "__main__":
    main()
