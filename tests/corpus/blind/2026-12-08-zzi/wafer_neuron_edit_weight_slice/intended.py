"""Wafer-map defect classifier whose FFN "knowledge neurons" are edited between fine-tuning epochs.

Reduced from Hunter-DDM/knowledge-neurons issue #14, "RuntimeError: a view of a leaf Variable
that requires grad is being used in an in-place operation."
(https://github.com/Hunter-DDM/knowledge-neurons/issues/14). The reporter ran the repository's
knowledge-editing script, which, for each knowledge neuron (layer, pos) found by attribution,
shifts one column of the FFN output projection of a BERT model:
    model.bert.encoder.layer[layer].output.dense.weight[:, pos] -= ori_pred_emb * lambda_1
    model.bert.encoder.layer[layer].output.dense.weight[:, pos] += tgt_emb * lambda_2
and got the error above: indexing a Parameter gives a view of a leaf that requires grad, and
autograd refuses to write into it in place. The thread has no answer; the intent is plainly a
direct weight edit outside autograd (inside `torch.no_grad()`, as the repository's era of
PyTorch allowed silently).

Reduction: a small transformer-style encoder (patch embedding, self-attention, intermediate and
output dense FFN as in BERT) classifies wafer-bin maps of a fab's probe test into defect
patterns (none, center, edge-ring, scratch, donut). After an epoch of AdamW fine-tuning the
quality engineer finds the FFN neurons that fire most for "scratch" maps and edits their output
columns to move the prediction from "scratch" toward "edge-ring" (a relabelling the fab decided
on), then keeps fine-tuning. The edit fails on the first in-place write into the weight column.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

HPARAMS = {
    "map_size": 16,
    "patch": 4,
    "hidden": 32,
    "intermediate": 64,
    "classes": 5,            # none, center, edge-ring, scratch, donut
    "wafers": 32,
    "batch_size": 16,
    "epochs": 2,
    "lr": 1e-3,
    "edit_layer": 0,
    "top_neurons": 3,
    "lambda_erase": 0.5,
    "lambda_insert": 0.5,
}
CLASSES = ["none", "center", "edge-ring", "scratch", "donut"]


class FFNOutput(nn.Module):
    def __init__(self, intermediate, hidden):
        super().__init__()
        self.dense = nn.Linear(intermediate, hidden)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, inner, residual):
        return self.norm(self.dense(inner) + residual)


class EncoderLayer(nn.Module):
    def __init__(self, hidden, intermediate):
        super().__init__()
        self.attention = nn.MultiheadAttention(hidden, num_heads=4, batch_first=True)
        self.attn_norm = nn.LayerNorm(hidden)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = FFNOutput(intermediate, hidden)
        self.last_inner = None

    def forward(self, x):
        a, _ = self.attention(x, x, x)
        x = self.attn_norm(x + a)
        inner = F.gelu(self.intermediate(x))
        self.last_inner = inner.detach()
        return self.output(inner, x)


class WaferEncoder(nn.Module):
    def __init__(self, hp):
        super().__init__()
        n_patches = (hp["map_size"] // hp["patch"]) ** 2
        self.patch_embed = nn.Conv2d(1, hp["hidden"], hp["patch"], stride=hp["patch"])
        self.pos = nn.Parameter(torch.zeros(1, n_patches, hp["hidden"]))
        self.layers = nn.ModuleList([EncoderLayer(hp["hidden"], hp["intermediate"]) for _ in range(2)])
        self.classifier = nn.Linear(hp["hidden"], hp["classes"])

    def forward(self, maps):
        x = self.patch_embed(maps).flatten(2).transpose(1, 2) + self.pos
        for layer in self.layers:
            x = layer(x)
        return self.classifier(x.mean(dim=1))


def synth_wafers(n, size):
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    r = ((yy - size / 2 + 0.5) ** 2 + (xx - size / 2 + 0.5) ** 2).sqrt() / (size / 2)
    labels = torch.randint(0, 5, (n,))
    maps = (torch.rand(n, 1, size, size) < 0.05).float()
    for i, c in enumerate(labels.tolist()):
        if c == 1:
            maps[i, 0][r < 0.3] = 1.0
        elif c == 2:
            maps[i, 0][r > 0.85] = 1.0
        elif c == 3:
            maps[i, 0][(yy - xx).abs() < 1] = 1.0
        elif c == 4:
            maps[i, 0][(r > 0.4) & (r < 0.6)] = 1.0
    return maps, labels


def fine_tune_epoch(model, optimizer, maps, labels, batch_size):
    model.train()
    running = 0.0
    for start in range(0, maps.shape[0], batch_size):
        logits = model(maps[start:start + batch_size])
        loss = F.cross_entropy(logits, labels[start:start + batch_size])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss.item()
    return running


def find_knowledge_neurons(model, maps, labels, layer, source_class, top):
    model.eval()
    with torch.no_grad():
        model(maps[labels == source_class])
    inner = model.layers[layer].last_inner          # (n, patches, intermediate)
    score = inner.mean(dim=(0, 1))
    return score.topk(top).indices.tolist()


def edit_knowledge(model, layer, positions, ori_class, tgt_class, lam_erase, lam_insert):
    # direction of each class in hidden space, as the classifier reads it
    ori_pred_emb = model.classifier.weight[ori_class]
    tgt_emb = model.classifier.weight[tgt_class]
    dense = model.layers[layer].output.dense
    with torch.no_grad():
        for pos in positions:
            dense.weight[:, pos] -= ori_pred_emb * lam_erase
            dense.weight[:, pos] += tgt_emb * lam_insert


def main():
    hp = HPARAMS
    maps, labels = synth_wafers(hp["wafers"], hp["map_size"])
    model = WaferEncoder(hp)
    optimizer = torch.optim.AdamW(model.parameters(), lr=hp["lr"])
    for epoch in range(hp["epochs"]):
        loss = fine_tune_epoch(model, optimizer, maps, labels, hp["batch_size"])
        print(f"epoch {epoch}: loss {loss:.3f}")
        if epoch == 0:
            src, tgt = CLASSES.index("scratch"), CLASSES.index("edge-ring")
            neurons = find_knowledge_neurons(model, maps, labels, hp["edit_layer"], src, hp["top_neurons"])
            edit_knowledge(model, hp["edit_layer"], neurons, src, tgt, hp["lambda_erase"], hp["lambda_insert"])
            print(f"edited neurons {neurons} of layer {hp['edit_layer']}")


if __name__ == "__main__":
    main()
