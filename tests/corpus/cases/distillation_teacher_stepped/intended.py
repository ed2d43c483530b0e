"""Online knowledge distillation: the teacher is fine-tuned and the student distils from it in the same loop."""

import torch
import torch.nn as nn
import torch.nn.functional as F

T = 4.0
ALPHA = 0.7


class Trainer:
    def __init__(self):
        self.teacher = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 6))
        self.student = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 6))
        self.t_opt = torch.optim.SGD(self.teacher.parameters(), lr=0.05)
        self.s_opt = torch.optim.Adam(self.student.parameters(), lr=1e-3)

    def distill_loss(self, s_logits, t_logits, labels):
        soft = F.kl_div(F.log_softmax(s_logits / T, dim=1), F.softmax(t_logits / T, dim=1), reduction="batchmean")
        return ALPHA * soft * T * T + (1 - ALPHA) * F.cross_entropy(s_logits, labels)

    def train_step(self, x, y):
        t_logits = self.teacher(x)
        s_logits = self.student(x)

        teacher_loss = F.cross_entropy(t_logits, y)
        self.t_opt.zero_grad()
        teacher_loss.backward()
        self.t_opt.step()

        student_loss = self.distill_loss(s_logits, t_logits.detach(), y)
        self.s_opt.zero_grad()
        student_loss.backward()
        self.s_opt.step()
        return teacher_loss.item(), student_loss.item()


if __name__ == "__main__":
    torch.manual_seed(18)
    trainer = Trainer()
    X = torch.randn(48, 12)
    Y = torch.randint(0, 6, (48,))
    for epoch in range(2):
        for i in range(0, 48, 12):
            print(epoch, trainer.train_step(X[i : i + 12], Y[i : i + 12]))
