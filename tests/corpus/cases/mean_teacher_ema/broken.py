"""Mean teacher (semi-supervised): the teacher is an EMA of the student, updated in place every iteration."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(6)

student = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
teacher = copy.deepcopy(student)
optimizer = torch.optim.SGD(student.parameters(), lr=0.05, momentum=0.9)
EMA_DECAY = 0.99
CONS_WEIGHT = 2.0

x_lab, y_lab = torch.randn(16, 10), torch.randint(0, 4, (16,))
x_unlab = torch.randn(64, 10)


@torch.no_grad()
def update_teacher(teacher, student, decay):
    for t_param, s_param in zip(teacher.parameters(), student.parameters()):
        t_param.mul_(decay).add_(s_param, alpha=1 - decay)


for epoch in range(2):
    for step in range(4):
        batch = x_unlab[step * 16 : (step + 1) * 16]
        noisy_a = batch + 0.1 * torch.randn_like(batch)
        noisy_b = batch + 0.1 * torch.randn_like(batch)

        class_loss = F.cross_entropy(student(x_lab), y_lab)
        s_probs = F.softmax(student(noisy_a), dim=1)
        t_probs = F.softmax(teacher(noisy_b), dim=1)
        update_teacher(teacher, student, EMA_DECAY)
        consistency_loss = F.mse_loss(s_probs, t_probs)
        loss = class_loss + CONS_WEIGHT * consistency_loss

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, class_loss.item(), consistency_loss.item())
