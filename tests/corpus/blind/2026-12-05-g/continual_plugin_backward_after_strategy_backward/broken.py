"""Reduced from https://github.com/ContinualAI/avalanche/pull/1388

A continual-learning strategy (Avalanche's BaseSGDTemplate layout: a training loop with plugin
callbacks) runs the backward pass itself, self.loss.backward(), and then calls every plugin's
after_backward. The author of the pull request wrote a plugin that adds its own regularisation
gradient there, a backward of a penalty computed from the strategy's minibatch output, "so that
plugins can do their own backward pass after the one triggered automatically without having to
execute the forward pass again"; it fails with "Trying to backward through the graph a second
time", because the strategy's backward has freed the graph of mb_output. The merged fix adds
strategy.retain_graph, passed to the automatic backward, which the plugin sets to True.

Here a small split-task stream, a Naive strategy and an output-regularisation plugin.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SimpleMLP(nn.Module):
    def __init__(self, num_classes=10, input_size=20, hidden_size=32):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(input_size, hidden_size), nn.ReLU())
        self.classifier = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x))


class SupervisedPlugin:
    def before_training(self, strategy):
        pass

    def after_backward(self, strategy):
        pass


class OutputNormPlugin(SupervisedPlugin):
    """Penalise large logits on the current minibatch, reusing the strategy's forward."""

    def __init__(self, alpha=0.01):
        self.alpha = alpha

    def after_backward(self, strategy):
        penalty = self.alpha * strategy.mb_output.pow(2).mean()
        penalty.backward()


class Naive:
    def __init__(self, model, optimizer, criterion, train_mb_size, train_epochs, plugins=()):
        self.model = model
        self.optimizer = optimizer
        self._criterion = criterion
        self.train_mb_size = train_mb_size
        self.train_epochs = train_epochs
        self.plugins = list(plugins)
        self.mb_output = None
        self.loss = None

    def _call(self, hook):
        for p in self.plugins:
            getattr(p, hook)(self)

    def criterion(self):
        return self._criterion(self.mb_output, self.mb_y)

    def backward(self):
        self.loss.backward()

    def train(self, experience):
        self.model.train()
        self._call("before_training")
        x, y = experience
        for _ in range(self.train_epochs):
            for i in range(0, len(x), self.train_mb_size):
                self.mb_x, self.mb_y = x[i : i + self.train_mb_size], y[i : i + self.train_mb_size]
                self.optimizer.zero_grad()
                self.mb_output = self.model(self.mb_x)
                self.loss = self.criterion()
                self.backward()
                self._call("after_backward")
                self.optimizer.step()
            print(f"epoch loss {self.loss.item():.4f}")


def split_stream(n_experiences=2, n=64, n_classes=10):
    per = n_classes // n_experiences
    stream = []
    for e in range(n_experiences):
        x = torch.randn(n, 20)
        y = torch.randint(e * per, (e + 1) * per, (n,))
        stream.append((x, y))
    return stream


model = SimpleMLP(num_classes=10)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
cl_strategy = Naive(
    model, optimizer, nn.CrossEntropyLoss(), train_mb_size=16, train_epochs=1, plugins=[OutputNormPlugin()]
)

for experience in split_stream():
    cl_strategy.train(experience)
    print("Training completed")
