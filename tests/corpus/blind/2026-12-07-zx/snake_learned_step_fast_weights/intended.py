"""Snake species ID with a learned inner-loop step size (meta-learned optimizer).

Source: https://github.com/facebookresearch/higher/issues/32
The author wanted a trainable optimizer: a small "eta" network that produces the step size of a
differentiable SGD, meta-trained by backpropagating a validation loss through a few unrolled inner steps
(CIFAR-10 in the report). Their DifferentiableOptimizer subclass wrote each updated weight back with
``p_new = p + lr*g; group['params'][p_idx] = p_new`` and the script died at ``meta_loss.backward()`` of a
later outer iteration with "Trying to backward through the graph a second time".

Reduction: a field-guide app classifies snake species from scale-count and head-shape measurements.
A hand-written differentiable SGD holds the classifier's weights in its param_groups and stores each
adapted weight there; a step-size net maps each gradient's log-magnitude to a learning rate; the meta
optimizer updates the classifier's initial weights and the step-size net from the query loss.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)

CONFIG = {
    "n_species": 4,
    "n_features": 10,
    "hidden": 24,
    "support_size": 16,
    "query_size": 16,
    "inner_steps": 2,
    "outer_steps": 4,
    "meta_lr": 1e-2,
}


def sample_survey(cfg, prototypes):
    """One regional survey: measurements drawn around each species' prototype."""
    n = cfg["support_size"] + cfg["query_size"]
    species = torch.randint(0, cfg["n_species"], (n,))
    measurements = prototypes[species] + 0.6 * torch.randn(n, cfg["n_features"])
    s = cfg["support_size"]
    return (measurements[:s], species[:s]), (measurements[s:], species[s:])


class SnakeClassifier(nn.Module):
    def __init__(self, n_features, hidden, n_species):
        super().__init__()
        self.fc1 = nn.Linear(n_features, hidden)
        self.fc2 = nn.Linear(hidden, n_species)

    def forward(self, x, weights=None):
        if weights is None:
            weights = list(self.parameters())
        w1, b1, w2, b2 = weights
        h = F.relu(F.linear(x, w1, b1))
        return F.linear(h, w2, b2)


class StepSizeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1, 1)
        nn.init.constant_(self.fc.bias, -2.0)

    def forward(self, grad):
        feature = grad.abs().mean().clamp(min=1e-8).log().view(1, 1)
        return 0.5 * torch.sigmoid(self.fc(feature)).view(())


class DifferentiableSGD:
    """SGD whose update stays in the graph, with one learned step size per weight tensor."""

    def __init__(self, params, step_net):
        self.param_groups = [{"params": list(params)}]
        self.step_net = step_net

    def step(self, loss):
        group = self.param_groups[0]
        grads = torch.autograd.grad(loss, group["params"], create_graph=True)
        for p_idx, (p, g) in enumerate(zip(group["params"], grads)):
            lr = self.step_net(g)
            group["params"][p_idx] = p - lr * g
        return group["params"]


def meta_train(cfg):
    prototypes = 1.5 * torch.randn(cfg["n_species"], cfg["n_features"])
    classifier = SnakeClassifier(cfg["n_features"], cfg["hidden"], cfg["n_species"])
    step_net = StepSizeNet()
    meta_opt = torch.optim.Adam(list(classifier.parameters()) + list(step_net.parameters()), lr=cfg["meta_lr"])

    for outer in range(cfg["outer_steps"]):
        (xs, ys), (xq, yq) = sample_survey(cfg, prototypes)
        inner_opt = DifferentiableSGD(classifier.parameters(), step_net)
        fast_weights = inner_opt.param_groups[0]["params"]
        for _ in range(cfg["inner_steps"]):
            support_loss = F.cross_entropy(classifier(xs, fast_weights), ys)
            fast_weights = inner_opt.step(support_loss)
        query_loss = F.cross_entropy(classifier(xq, fast_weights), yq)
        meta_opt.zero_grad()
        query_loss.backward()
        meta_opt.step()
        accuracy = (classifier(xq, fast_weights).argmax(dim=1) == yq).float().mean().item()
        print(f"outer {outer}: query loss {query_loss.item():.4f}, adapted accuracy {accuracy:.2f}")


if __name__ == "__main__":
    meta_train(CONFIG)
