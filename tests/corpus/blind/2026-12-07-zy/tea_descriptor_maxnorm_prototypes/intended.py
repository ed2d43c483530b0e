"""Tea leaf grading with a tasting-note descriptor vocabulary.

Source: https://github.com/pytorch/pytorch/issues/28959
The report used an nn.Embedding with max_norm, whose forward renormalises the
looked-up rows of the weight in place, and hit an autograd error at backward
(the maintainers pointed to the documented caveat: a differentiable use of
Embedding.weight before the lookup needs a clone of the weight). Reduced here to
a grading model that scores every leaf sample against the whole descriptor
table (used as prototypes) and then looks up the descriptors a taster actually
wrote down for that sample, with a max_norm embedding shared by both uses.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

CFG = {"n_samples": 72, "n_chem": 9, "n_descriptors": 20, "notes_per_cup": 3,
       "dim": 16, "n_grades": 5, "batch": 18, "epochs": 2, "lr": 1e-2, "note_weight": 0.5}


def tasting_sessions(cfg):
    g = torch.Generator().manual_seed(3)
    chem = torch.randn(cfg["n_samples"], cfg["n_chem"], generator=g)   # catechins, caffeine, theanine, moisture, ...
    notes = torch.randint(0, cfg["n_descriptors"], (cfg["n_samples"], cfg["notes_per_cup"]), generator=g)
    grade = ((chem[:, 0] + 0.5 * chem[:, 2] - 0.4 * chem[:, 3]).clamp(-2, 2) + 2).round().long()
    return chem, notes, grade.clamp(0, cfg["n_grades"] - 1)


class LeafGrader(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["dim"]
        self.leaf = nn.Sequential(nn.Linear(cfg["n_chem"], 32), nn.GELU(), nn.Linear(32, d))
        self.descriptors = nn.Embedding(cfg["n_descriptors"], d, max_norm=1.0)
        self.grade_head = nn.Linear(2 * d, cfg["n_grades"])

    def forward(self, chem, notes):
        leaf_vec = self.leaf(chem)
        prototypes = self.descriptors.weight.clone()
        note_logits = leaf_vec @ prototypes.t()
        cup_notes = self.descriptors(notes).mean(dim=1)
        grade_logits = self.grade_head(torch.cat([leaf_vec, cup_notes], dim=1))
        return grade_logits, note_logits


def note_targets(notes, n_descriptors):
    multi_hot = torch.zeros(notes.shape[0], n_descriptors)
    multi_hot.scatter_(1, notes, 1.0)
    return multi_hot


def fit(model, optimizer, chem, notes, grade, cfg):
    for epoch in range(cfg["epochs"]):
        for i in range(0, cfg["n_samples"], cfg["batch"]):
            sl = slice(i, i + cfg["batch"])
            optimizer.zero_grad()
            grade_logits, note_logits = model(chem[sl], notes[sl])
            grade_loss = F.cross_entropy(grade_logits, grade[sl])
            note_loss = F.binary_cross_entropy_with_logits(note_logits, note_targets(notes[sl], cfg["n_descriptors"]))
            total = grade_loss + cfg["note_weight"] * note_loss
            total.backward()
            optimizer.step()
        print(f"epoch {epoch}: grade {grade_loss.item():.3f} notes {note_loss.item():.3f}")


def main():
    torch.manual_seed(0)
    chem, notes, grade = tasting_sessions(CFG)
    model = LeafGrader(CFG)
    optimizer = torch.optim.Adam(model.parameters(), lr=CFG["lr"])
    fit(model, optimizer, chem, notes, grade, CFG)


if __name__ == "__main__":
    main()
