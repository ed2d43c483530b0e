"""Reduced from https://github.com/JiangpengHe/CL-LoRA/issues/1

CL-LoRA (class-incremental learning without rehearsal, LoRA adapters on a frozen ViT, PyCIL-style
learner). The author ran the released cifar config; on the second task ("Learning on 5-10") the
training stopped in _init_train at loss.backward() with "one of the variables needed for gradient
computation has been modified by an inplace operation". In the loop, for every task after the
first, the batch's forward and cross-entropy loss are computed first; then a knowledge-distillation
update runs (loss_kd.backward(), the current adapters' lora_A gradients reweighted by the norms of
the previous task's adapters, optimizer.step()), and only after it the cross-entropy loss (plus a
small orthogonality term) is backwarded and stepped. The evident intent is two updates per batch,
the distillation one and then the classification one; the classification loss has to come from a
forward through the adapters as the distillation step left them.

Here a small frozen MLP backbone with LoRA adapters stands in for the ViT.
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

IN_DIM, DIM, N_BLOCKS, RANK = 20, 32, 2, 4


def _KD_loss(pred, soft, T):
    pred = torch.log_softmax(pred / T, dim=1)
    soft = torch.softmax(soft / T, dim=1)
    return -1 * torch.mul(soft, pred).sum() / pred.shape[0]


def compute_orthogonality_loss(previous_weights_list, current_weights, epsilon=1e-8):
    loss = 0.0
    for prev in previous_weights_list:
        cos = (prev * current_weights).sum() / (prev.norm() * current_weights.norm() + epsilon)
        loss = loss + cos.abs()
    return loss


class LoRA(nn.Module):
    def __init__(self, dim, rank):
        super().__init__()
        self.lora_A = nn.Linear(dim, rank, bias=False)
        self.lora_B = nn.Linear(rank, dim, bias=False)
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        return self.lora_B(self.lora_A(x))


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(IN_DIM, DIM)
        self.blocks = nn.ModuleList([nn.Linear(DIM, DIM) for _ in range(N_BLOCKS)])
        for p in list(self.embed.parameters()) + list(self.blocks.parameters()):
            p.requires_grad = False
        self.cur_adapter = nn.ModuleList([LoRA(DIM, RANK) for _ in range(N_BLOCKS)])
        self.old_adapter_list = []
        self.block_weight = nn.Parameter(torch.ones(N_BLOCKS))
        self.block_weight_list = []

    def forward(self, x, adapters=None):
        adapters = self.cur_adapter if adapters is None else adapters
        h = self.embed(x)
        for i, blk in enumerate(self.blocks):
            h = h + F.gelu(blk(h) + self.block_weight[i] * adapters[i](h))
        return h

    def add_adapter_to_list(self):
        old = copy.deepcopy(self.cur_adapter)
        for p in old.parameters():
            p.requires_grad = False
        self.old_adapter_list.append(old)
        self.block_weight_list.append(self.block_weight.detach().clone())


class IncNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.fc = None

    def update_fc(self, nb_classes):
        self.fc = nn.Linear(DIM, nb_classes)

    def forward(self, x):
        return {"logits": self.fc(self.backbone(x))}

    def forward_kd(self, x, cur_task):
        out_new = {"logits": self.fc(self.backbone(x))}
        with torch.no_grad():
            feats = self.backbone(x, adapters=self.backbone.old_adapter_list[cur_task - 1])
            out_teacher = {"logits": self.fc(feats)}
        return out_new, out_teacher


class Learner:
    def __init__(self, init_cls, increment, init_epochs, later_epochs, lr):
        self._network = IncNet()
        self._cur_task = -1
        self._known_classes = 0
        self._total_classes = 0
        self.init_cls, self.inc = init_cls, increment
        self.init_epochs, self.later_epochs, self.lr = init_epochs, later_epochs, lr

    def incremental_train(self, train_loader):
        self._cur_task += 1
        self._total_classes = self._known_classes + (self.init_cls if self._cur_task == 0 else self.inc)
        self._network.update_fc(self._total_classes)
        print(f"Learning on {self._known_classes}-{self._total_classes}")
        self._train(train_loader)

    def after_task(self):
        self._known_classes = self._total_classes
        self._network.backbone.add_adapter_to_list()

    def _train(self, train_loader):
        optimizer = torch.optim.SGD(
            filter(lambda p: p.requires_grad, self._network.parameters()), momentum=0.9, lr=self.lr
        )
        epochs = self.init_epochs if self._cur_task == 0 else self.later_epochs
        self._init_train(train_loader, optimizer, epochs)

    def _init_train(self, train_loader, optimizer, epochs):
        backbone = self._network.backbone
        for epoch in range(epochs):
            losses = 0.0
            for inputs, targets in train_loader:
                aux_targets = targets.clone()
                aux_targets = torch.where(
                    aux_targets - self._known_classes >= 0, aux_targets - self._known_classes, -1
                )
                output = self._network(inputs)
                logits = output["logits"][:, self._known_classes :]
                loss = F.cross_entropy(logits, aux_targets, ignore_index=-1)

                if self._cur_task > 0:
                    kd_ratio = 5.0
                    out_new, out_teacher = self._network.forward_kd(inputs, self._cur_task)
                    old_logits = out_new["logits"][:, : self._known_classes]
                    teacher_logits = out_teacher["logits"][:, : self._known_classes]
                    loss_kd = kd_ratio * _KD_loss(old_logits, teacher_logits, T=2)

                    optimizer.zero_grad()
                    loss_kd.backward()
                    for j, old in enumerate(backbone.old_adapter_list[self._cur_task - 1]):
                        temp_weights = torch.norm(old.lora_A.weight, dim=1)
                        temp_weights = len(temp_weights) * temp_weights / torch.sum(temp_weights)
                        backbone.cur_adapter[j].lora_A.weight.grad = (
                            temp_weights.unsqueeze(1) * backbone.cur_adapter[j].lora_A.weight.grad
                        )
                    optimizer.step()

                if self._cur_task > 0:
                    orth_loss_specific = compute_orthogonality_loss(backbone.block_weight_list, backbone.block_weight)
                    loss += 0.0001 * orth_loss_specific

                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses += loss.item()
            print(f"Task {self._cur_task}, Epoch {epoch + 1}/{epochs} => Loss {losses / len(train_loader):.3f}")


def make_task(classes, n=48, batch=16):
    x = torch.randn(n, IN_DIM)
    y = torch.tensor(classes)[torch.randint(0, len(classes), (n,))]
    return list(zip(x.split(batch), y.split(batch)))


tasks = [make_task([0, 1, 2, 3, 4], n=32), make_task([5, 6, 7, 8, 9], n=48)]

model = Learner(init_cls=5, increment=5, init_epochs=1, later_epochs=2, lr=0.03)
for task_loader in tasks:
    model.incremental_train(task_loader)
    model.after_task()
