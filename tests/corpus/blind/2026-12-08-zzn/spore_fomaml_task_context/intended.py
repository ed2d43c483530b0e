"""First-order MAML for few-shot fungal strain identification from spore morphology.

Reduced from tristandeleu/pytorch-meta issue #89, "Unable to use first-order MAML approaches"
(https://github.com/tristandeleu/pytorch-meta/issues/89).

The author was meta-training with Torchmeta's helper in their inner loop,
``params = gradient_update_parameters(self.model, inner_losses, params=params,
step_size=self.inner_step_size, first_order=True)``, and then calling ``.backward()`` and ``step()``
on the outer (query) loss, which failed with "RuntimeError: Trying to backward through the graph a
second time, but the buffers have already been freed. Specify retain_graph=True when calling
backward the first time." With ``first_order=True`` the helper calls ``torch.autograd.grad`` on the
inner loss without ``create_graph`` and so without ``retain_graph``: it frees the buffers of every
part of the graph it walks. The maintainer could not reproduce it with a model whose query forward is
computed afresh from the adapted parameters; the error appears when the query forward reuses a
tensor the inner forward built. The author's evident intent is plain first-order MAML: the inner
step's gradient is used as a constant, and the outer loss still trains every meta-parameter.

Reduction: a CAVIA-like learner for fungal pathogen strains, each task a few strains described by
spore-morphology features (length, width, septa, wall thickness, colour indices, ...). The model
embeds the task's labelled support set into a task vector and classifies spores conditioned on it;
all its layers run on an explicit parameter dict, like a MetaModule. The trainer embeds the task
vector once per task and reuses it for the inner (support) loss and for the query loss, while the
``gradient_update_parameters`` helper, written as Torchmeta's (``first_order=True``, one inner
step), differentiates the inner loss with respect to every meta-parameter, the task encoder's
included: that grad walks the task vector's graph and frees it, so the outer ``backward()``
fails. The trainer class, the helper and the meta-optimizer (Adam over the whole model) follow the
report.
"""
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(89)

HPARAMS = {
    "n_features": 10,        # spore length, width, septa, wall thickness, colour indices, ...
    "n_ways": 3,
    "n_shots": 4,
    "n_queries": 5,
    "context_dim": 8,
    "hidden": 24,
    "inner_step_size": 0.1,
    "num_steps": 1,
    "meta_batch_size": 2,
    "num_batches": 3,
    "num_epochs": 2,
    "meta_lr": 1e-3,
}


def gradient_update_parameters(model, loss, params=None, step_size=0.5, first_order=False):
    """One gradient step on every meta-parameter, as Torchmeta's helper does it."""
    if params is None:
        params = OrderedDict(model.meta_named_parameters())
    grads = torch.autograd.grad(loss, params.values(), create_graph=not first_order)
    updated = OrderedDict()
    for (name, param), grad in zip(params.items(), grads):
        updated[name] = param - step_size * grad
    return updated


class SporeLearner(nn.Module):
    """CAVIA-like learner: a task vector from the labelled support set conditions a classifier.

    Every layer is used functionally, so the whole model can run on an adapted parameter dict,
    as a Torchmeta MetaModule does.
    """

    def __init__(self, hp):
        super().__init__()
        self.n_ways = hp["n_ways"]
        self.ctx1 = nn.Linear(hp["n_features"] + hp["n_ways"], 32)
        self.ctx2 = nn.Linear(32, hp["context_dim"])
        self.fc1 = nn.Linear(hp["n_features"] + hp["context_dim"], hp["hidden"])
        self.fc2 = nn.Linear(hp["hidden"], hp["n_ways"])

    def meta_named_parameters(self):
        return self.named_parameters()

    def task_context(self, support_x, support_y, params=None):
        if params is None:
            params = OrderedDict(self.named_parameters())
        pairs = torch.cat([support_x, F.one_hot(support_y, self.n_ways).float()], dim=1)
        h = F.relu(F.linear(pairs, params["ctx1.weight"], params["ctx1.bias"]))
        return F.linear(h, params["ctx2.weight"], params["ctx2.bias"]).mean(dim=0)

    def classify(self, x, context, params=None):
        if params is None:
            params = OrderedDict(self.named_parameters())
        h = torch.cat([x, context.expand(x.size(0), -1)], dim=1)
        h = F.relu(F.linear(h, params["fc1.weight"], params["fc1.bias"]))
        return F.linear(h, params["fc2.weight"], params["fc2.bias"])

    def forward(self, x, support_x, support_y, params=None):
        return self.classify(x, self.task_context(support_x, support_y, params=params), params=params)


class MetaTrainer:
    def __init__(self, model, meta_optimizer, hp):
        self.model = model
        self.meta_optimizer = meta_optimizer
        self.inner_step_size = hp["inner_step_size"]
        self.num_steps = hp["num_steps"]

    def train_batch(self, tasks):
        self.meta_optimizer.zero_grad()
        outer_loss = torch.tensor(0.0)
        for support_x, support_y, query_x, query_y in tasks:
            params = OrderedDict(self.model.meta_named_parameters())
            for _ in range(self.num_steps):
                inner_losses = F.cross_entropy(self.model(support_x, support_x, support_y, params=params), support_y)
                params = gradient_update_parameters(self.model, inner_losses, params=params,
                                                    step_size=self.inner_step_size, first_order=True)
            # a fresh forward on the adapted parameters, task vector included
            query_logits = self.model(query_x, support_x, support_y, params=params)
            outer_loss = outer_loss + F.cross_entropy(query_logits, query_y)
        outer_loss = outer_loss / len(tasks)
        outer_loss.backward()
        self.meta_optimizer.step()
        return outer_loss.item()


def sample_task(hp, strain_bank):
    strains = torch.randperm(strain_bank.size(0))[: hp["n_ways"]]
    centres = strain_bank[strains]
    support_y = torch.arange(hp["n_ways"]).repeat_interleave(hp["n_shots"])
    query_y = torch.arange(hp["n_ways"]).repeat_interleave(hp["n_queries"])
    support_x = centres[support_y] + 0.3 * torch.randn(support_y.size(0), hp["n_features"])
    query_x = centres[query_y] + 0.3 * torch.randn(query_y.size(0), hp["n_features"])
    return support_x, support_y, query_x, query_y


def main():
    hp = HPARAMS
    strain_bank = torch.randn(12, hp["n_features"])   # morphology centroids of 12 pathogen strains
    batches = [[sample_task(hp, strain_bank) for _ in range(hp["meta_batch_size"])]
               for _ in range(hp["num_batches"])]
    model = SporeLearner(hp)
    meta_optimizer = torch.optim.Adam(model.parameters(), lr=hp["meta_lr"])
    trainer = MetaTrainer(model, meta_optimizer, hp)
    for epoch in range(hp["num_epochs"]):
        losses = [trainer.train_batch(tasks) for tasks in batches]
        print(f"epoch {epoch}: outer loss {sum(losses) / len(losses):.4f}")


if __name__ == "__main__":
    main()
