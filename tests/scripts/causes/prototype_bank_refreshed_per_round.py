"""A student matched to class prototypes that a separately trained teacher provides. Each round the teacher is
fitted, then a bank stores the prototypes and a per-feature scale computed from the teacher's features; the
student's steps of that round read both. The bank's tensors keep the teacher's graph, which the student's first
backward frees.
"""

import torch
from torch import nn

torch.manual_seed(5)
data, labels = torch.randn(60, 6), torch.randint(0, 3, (60,))
targets = nn.functional.one_hot(labels, 3).float() @ torch.randn(3, 8)

teacher = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8))
student = nn.Sequential(nn.Linear(6, 8))
teacher_opt = torch.optim.Adam(teacher.parameters(), lr=1e-2)
student_opt = torch.optim.SGD(student.parameters(), lr=0.1)


class PrototypeBank:
    def refresh(self, feats):
        self.centers = torch.stack([feats[labels == c].mean(0) for c in range(3)])
        self.scale = feats.std(0) + 1e-3


bank = PrototypeBank()
for rnd in range(2):
    for _ in range(3):
        fit = nn.functional.mse_loss(teacher(data), targets)
        teacher_opt.zero_grad()
        fit.backward()
        teacher_opt.step()
    bank.refresh(teacher(data))
    for _ in range(3):
        z = student(data)
        dist = ((z.unsqueeze(1) - bank.centers) / bank.scale).pow(2).sum(-1)
        match = nn.functional.cross_entropy(-dist, labels)
        student_opt.zero_grad()
        match.backward()
        student_opt.step()
    print(rnd, round(fit.item(), 5), round(match.item(), 5))
