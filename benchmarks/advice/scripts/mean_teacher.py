"""Semi-supervised: a mean teacher; the student learns from few labels plus consistency with an EMA teacher."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def two_spirals(n):
    t = torch.rand(n) * 3 + 0.5
    label = torch.randint(0, 2, (n,))
    sign = 2 * label.float() - 1
    x = torch.stack([sign * t * torch.cos(2 * t), sign * t * torch.sin(2 * t)], dim=1)
    return x + 0.1 * torch.randn(n, 2), label


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(2, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 2)

    def forward(self, x):
        x = F.leaky_relu(self.fc1(x), 0.1)
        x = F.leaky_relu(self.fc2(x), 0.1)
        return self.fc3(x)


class MeanTeacher:
    def __init__(self, alpha=0.95, consistency=1.0):
        self.student = Net()
        self.teacher = copy.deepcopy(self.student)
        self.optimizer = torch.optim.Adam(self.student.parameters(), lr=1e-2)
        self.alpha = alpha
        self.consistency = consistency

    def update_teacher(self):
        with torch.no_grad():
            for t, s in zip(self.teacher.parameters(), self.student.parameters()):
                t.mul_(self.alpha).add_(s, alpha=1 - self.alpha)

    def train_step(self, x_lab, y_lab, x_unlab):
        noisy = x_unlab + 0.05 * torch.randn_like(x_unlab)
        student_logits = self.student(torch.cat([x_lab, noisy]))
        teacher_probs = F.softmax(self.teacher(x_unlab), dim=1).detach()
        sup = F.cross_entropy(student_logits[: len(x_lab)], y_lab)
        student_probs = F.softmax(student_logits[len(x_lab) :], dim=1)
        cons = F.mse_loss(student_probs, teacher_probs)
        loss = sup + self.consistency * cons
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.update_teacher()
        return sup.item(), cons.item()


if __name__ == "__main__":
    x, y = two_spirals(256)
    x_lab, y_lab = x[:32], y[:32]
    mt = MeanTeacher()
    for epoch in range(2):
        for x_unlab in x[32:].split(56):
            sup, cons = mt.train_step(x_lab, y_lab, x_unlab)
        print(f"epoch {epoch}: supervised {sup:.3f} consistency {cons:.4f}")
