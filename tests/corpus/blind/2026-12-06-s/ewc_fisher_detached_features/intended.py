"""Elastic weight consolidation: the Fisher estimate is taken on log-likelihoods of detached features.

Report: https://github.com/shivamsaboo17/Overcoming-Catastrophic-forgetting-in-Neural-Networks/issues/2
The repository's ``ElasticWeightConsolidation`` trains on task A, then ``register_ewc_params``
estimates the Fisher information: it appends ``output[:, target]`` of the log-softmax outputs to a
list over the task-A batches, takes their mean and calls ``autograd.grad(log_likelihood,
self.model.parameters())``. The reporter ran out of memory in that list on a ResNet-50, detached to
save memory, and got "One of the differentiated Tensors appears to not have been used in the
graph. Set allow_unused=True". The maintainer answered that detach() stops the gradients the Fisher
needs and suggested keeping a running mean of the likelihoods instead of the list. Here the backbone
features are detached (the head stays in the graph), which is where the memory goes, so the
backbone's parameters are unused in the graph that ``autograd.grad`` differentiates.
(The backbone, the head and the two synthetic tasks are the writer's.)
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_IN, N_CLASSES, HIDDEN, BATCH = 32, 5, 64, 32


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(N_IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU())
        self.head = nn.Linear(HIDDEN, N_CLASSES)

    def forward(self, x):
        return self.head(self.backbone(x))


def make_task(n_batches):
    w = torch.randn(N_IN, N_CLASSES)
    batches = []
    for _ in range(n_batches):
        x = torch.randn(BATCH, N_IN)
        batches.append((x, (x @ w).argmax(-1)))
    return batches


class ElasticWeightConsolidation:
    def __init__(self, model, weight=100.0, lr=1e-3):
        self.model = model
        self.weight = weight
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        self.means, self.fishers = {}, {}

    def register_ewc_params(self, batches):
        log_likelihood, seen = 0.0, 0
        for x, y in batches:
            output = F.log_softmax(self.model(x), dim=1)
            batch_ll = output[torch.arange(len(y)), y]
            log_likelihood = log_likelihood * (seen / (seen + len(y))) + batch_ll.sum() / (seen + len(y))
            seen += len(y)
        grads = torch.autograd.grad(log_likelihood, list(self.model.parameters()))
        for (name, param), g in zip(self.model.named_parameters(), grads):
            self.means[name] = param.detach().clone()
            self.fishers[name] = g.detach() ** 2

    def penalty(self):
        total = 0.0
        for name, param in self.model.named_parameters():
            total = total + (self.fishers[name] * (param - self.means[name]) ** 2).sum()
        return (self.weight / 2) * total

    def forward_backward_update(self, x, y, use_ewc):
        loss = F.cross_entropy(self.model(x), y)
        if use_ewc:
            loss = loss + self.penalty()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


def main():
    task_a, task_b = make_task(2), make_task(8)
    model = Net()
    ewc = ElasticWeightConsolidation(model)
    for x, y in task_a:
        ewc.forward_backward_update(x, y, use_ewc=False)
    ewc.register_ewc_params(task_a)
    for epoch in range(2):
        for x, y in task_b:
            last = ewc.forward_backward_update(x, y, use_ewc=True)
        print(epoch, last)


if __name__ == "__main__":
    main()
