"""Few-shot typeface recognition with MAML: the inner-loop grad asks for every parameter, one head is not in the support loss.

Source: pytorch/pytorch issue #73697, "Improving error message RuntimeError: One of the
differentiated Tensors appears to not have been used in the graph. Set allow_unused=True
if this is the desired behavior." (https://github.com/pytorch/pytorch/issues/73697).

The reporter (doing meta-learning with torchmeta, PyTorch 1.9.1) gets "One of the
differentiated Tensors appears to not have been used in the graph. Set allow_unused=True
if this is the desired behavior." from the `torch.autograd.grad` call of the inner
adaptation loop and asks that the message name the offending tensor. The usual cause in
MAML code, and the situation here: the inner step differentiates the support loss with
respect to *all* of the model's parameters, while part of the model (an auxiliary head)
does not take part in the support loss. The evident intent is to adapt the parameters the
support loss uses and to leave the others at their meta values, i.e. what
`allow_unused=True` (and skipping the `None` gradients) gives.

Reduction: 5-way few-shot typeface recognition on synthetic 8x8 glyph bitmaps: a shared
trunk, a typeface-classification head adapted in the inner loop, and a stroke-weight
regression head trained only by the outer (meta) loss. First-order MAML with
`torch.func.functional_call`, an Adam meta-optimizer over all parameters.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

HPARAMS = {
    "n_way": 5,
    "k_shot": 3,
    "n_query": 4,
    "glyph_pixels": 64,
    "hidden": 48,
    "inner_lr": 0.2,
    "inner_steps": 2,
    "meta_lr": 1e-3,
    "meta_batch": 2,
    "meta_iterations": 4,
    "weight_loss_coef": 0.1,
}

torch.manual_seed(11)

# synthetic typeface "prototypes": each face is a stroke pattern plus a stroke weight
NUM_FACES = 20
FACE_PATTERNS = torch.rand(NUM_FACES, HPARAMS["glyph_pixels"])
FACE_WEIGHTS = torch.rand(NUM_FACES) * 0.8 + 0.2


def sample_task(hp):
    faces = torch.randperm(NUM_FACES)[: hp["n_way"]]
    per = hp["k_shot"] + hp["n_query"]
    glyphs, labels, weights = [], [], []
    for cls, face in enumerate(faces.tolist()):
        g = FACE_PATTERNS[face] * FACE_WEIGHTS[face] + 0.15 * torch.randn(per, hp["glyph_pixels"])
        glyphs.append(g)
        labels.append(torch.full((per,), cls, dtype=torch.long))
        weights.append(FACE_WEIGHTS[face].expand(per))
    glyphs = torch.stack(glyphs)
    labels = torch.stack(labels)
    weights = torch.stack(weights)
    k = hp["k_shot"]
    support = (glyphs[:, :k].reshape(-1, hp["glyph_pixels"]), labels[:, :k].reshape(-1))
    query = (glyphs[:, k:].reshape(-1, hp["glyph_pixels"]), labels[:, k:].reshape(-1),
             weights[:, k:].reshape(-1))
    return support, query


class TypefaceNet(nn.Module):
    def __init__(self, pixels, hidden, n_way):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(pixels, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.face_head = nn.Linear(hidden, n_way)
        self.weight_head = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.trunk(x)
        return self.face_head(h), self.weight_head(h).squeeze(-1)


def adapt(model, support, hp):
    """Inner loop: a few SGD steps on the support set, first-order."""
    fast = {name: p for name, p in model.named_parameters()}
    xs, ys = support
    for _ in range(hp["inner_steps"]):
        logits, _ = functional_call(model, fast, (xs,))
        support_loss = F.cross_entropy(logits, ys)
        grads = torch.autograd.grad(support_loss, list(fast.values()))
        fast = {name: p - hp["inner_lr"] * g.detach() for (name, p), g in zip(fast.items(), grads)}
    return fast


def main():
    hp = HPARAMS
    model = TypefaceNet(hp["glyph_pixels"], hp["hidden"], hp["n_way"])
    meta_optim = torch.optim.Adam(model.parameters(), lr=hp["meta_lr"])

    for it in range(hp["meta_iterations"]):
        meta_optim.zero_grad()
        query_loss = 0.0
        weight_loss = 0.0
        for _ in range(hp["meta_batch"]):
            support, (xq, yq, wq) = sample_task(hp)
            fast = adapt(model, support, hp)
            logits_q, _ = functional_call(model, fast, (xq,))
            query_loss = query_loss + F.cross_entropy(logits_q, yq) / hp["meta_batch"]
            _, weight_pred = model(xq)
            weight_loss = weight_loss + F.mse_loss(weight_pred, wq) / hp["meta_batch"]
        meta_loss = query_loss + hp["weight_loss_coef"] * weight_loss
        meta_loss.backward()
        meta_optim.step()
        print(f"meta-iter {it} query {query_loss.item():.4f} stroke-weight {weight_loss.item():.4f}")


if __name__ == "__main__":
    main()
