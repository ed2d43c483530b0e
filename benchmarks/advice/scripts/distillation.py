"""Knowledge distillation: a teacher MLP is trained first, then a smaller student learns from its softened logits."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_CLASSES = 5


def make_data(n=160, d=10):
    centers = 2 * torch.randn(N_CLASSES, d)
    y = torch.randint(0, N_CLASSES, (n,))
    return centers[y] + torch.randn(n, d), y


def mlp(d_in, hidden, d_out):
    return nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Dropout(0.1), nn.Linear(hidden, d_out))


def distillation_loss(student_logits, teacher_logits, labels, temperature=3.0, alpha=0.7):
    soft_targets = F.softmax(teacher_logits / temperature, dim=1)
    log_student = F.log_softmax(student_logits / temperature, dim=1)
    kd = F.kl_div(log_student, soft_targets, reduction="batchmean") * temperature**2
    ce = F.cross_entropy(student_logits, labels)
    return alpha * kd + (1 - alpha) * ce


def train_teacher(teacher, batches, epochs=2):
    opt = torch.optim.SGD(teacher.parameters(), lr=0.05, momentum=0.9)
    for _ in range(epochs):
        for x, y in batches:
            loss = F.cross_entropy(teacher(x), y)
            opt.zero_grad(set_to_none=False)
            loss.backward()
            opt.step()


def train_student(student, teacher, batches, epochs=2):
    opt = torch.optim.Adam(student.parameters(), lr=1e-2)
    teacher.eval()
    for epoch in range(epochs):
        for x, y in batches:
            with torch.no_grad():
                teacher_logits = teacher(x)
            student_logits = student(x)
            loss = distillation_loss(student_logits, teacher_logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"student epoch {epoch}: loss {loss.item():.3f}")


if __name__ == "__main__":
    x, y = make_data()
    batches = list(zip(x.split(40), y.split(40)))
    teacher = mlp(10, 64, N_CLASSES)
    student = mlp(10, 8, N_CLASSES)
    train_teacher(teacher, batches)
    train_student(student, teacher, batches)
