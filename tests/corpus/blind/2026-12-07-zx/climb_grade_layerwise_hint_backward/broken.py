"""Climbing-route grading: a small student distilled layer by layer from a larger frozen grader.

Source: https://github.com/pytorch/pytorch/issues/40005
The author trains the intermediate layers of a student BERT independently against chosen teacher
layers: inside a loop over the student's layers it computes a per-layer KL loss between the two
hidden states and calls ``output.backward(retain_graph=True)`` for each layer, and runs out of
memory; without ``retain_graph`` the second layer's backward fails because the shared lower layers'
graph was freed by the first. The maintainer points to the known issue and recommends another way
to get the gradients. This script reduces the ``retain_graph``-less form: a distiller runs the
student's layers one at a time and backpropagates each layer's hint loss as soon as it is computed,
to keep memory low, then adds the grade loss; the second layer's hint backward fails.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

N_HOLDS, HOLD_FEATS, N_GRADES = 12, 8, 10
CONFIG = {"width": 48, "student_layers": 3, "teacher_layers": 6, "hint_map": [1, 3, 5],
          "hint_weight": 0.5, "batch": 24, "steps": 3, "lr": 1e-3}


def route_batch(n):
    """Hold sequences (position, size, angle, type...) per route, and a V-grade label."""
    holds = torch.randn(n, N_HOLDS, HOLD_FEATS)
    difficulty = holds[:, :, 2].abs().mean(dim=1) * 6 + holds[:, :, 5].mean(dim=1)
    grade = difficulty.clamp(0, N_GRADES - 1).long()
    return holds, grade


class Block(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.fc = nn.Linear(w, w)
        self.norm = nn.LayerNorm(w)

    def forward(self, h):
        return self.norm(h + F.gelu(self.fc(h)))


class Grader(nn.Module):
    def __init__(self, n_layers, w):
        super().__init__()
        self.embed = nn.Linear(HOLD_FEATS, w)
        self.layers = nn.ModuleList(Block(w) for _ in range(n_layers))
        self.head = nn.Linear(w, N_GRADES)

    def hidden_states(self, holds):
        h = self.embed(holds)
        states = []
        for layer in self.layers:
            h = layer(h)
            states.append(h)
        return states


class LayerwiseDistiller:
    def __init__(self, student, teacher):
        self.student, self.teacher = student, teacher
        self.hint_proj = nn.ModuleList(nn.Linear(CONFIG["width"], CONFIG["width"]) for _ in student.layers)
        params = list(student.parameters()) + list(self.hint_proj.parameters())
        self.optimizer = torch.optim.Adam(params, lr=CONFIG["lr"])

    def step(self, holds, grade):
        with torch.no_grad():
            t_states = self.teacher.hidden_states(holds)
        self.optimizer.zero_grad()
        h = self.student.embed(holds)
        for i in range(len(self.student.layers)):
            h = self.student.layers[i](h)
            target = t_states[CONFIG["hint_map"][i]]
            hint_loss = CONFIG["hint_weight"] * F.mse_loss(self.hint_proj[i](h), target)
            hint_loss.backward()
        logits = self.student.head(h.mean(dim=1))
        grade_loss = F.cross_entropy(logits, grade)
        grade_loss.backward()
        self.optimizer.step()
        return grade_loss.item()


teacher = Grader(CONFIG["teacher_layers"], CONFIG["width"]).eval()
for p in teacher.parameters():
    p.requires_grad_(False)
student = Grader(CONFIG["student_layers"], CONFIG["width"])
distiller = LayerwiseDistiller(student, teacher)

for it in range(CONFIG["steps"]):
    holds, grade = route_batch(CONFIG["batch"])
    print(f"iter {it} grade_loss={distiller.step(holds, grade):.4f}")
