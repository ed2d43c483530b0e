"""Federated averaging (FedGen's FedAvg baseline): each round the server evaluates, users train, the server averages.

Source: https://github.com/zhuangdizhu/FedGen/issues/1 "Can't call numpy() on Tensor that requires grad"
(the same report: https://github.com/zhuangdizhu/FedGen/issues/15).
The reporter ran FedGen's ``main.py`` on MNIST; the server's ``evaluate`` aggregates the users'
test losses with numpy before the users train. Reduced: one user, a small MLP, random
28x28 "digits"; the Server/User code keeps FedGen's shape (``serverbase.py``, ``userbase.py``).
"""

import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Optimizer
from torch.utils.data import DataLoader, TensorDataset


class pFedIBOptimizer(Optimizer):
    def __init__(self, params, lr=0.01):
        defaults = dict(lr=lr)
        super().__init__(params, defaults)

    def step(self, apply=True, lr=None, allow_unused=False):
        grads = []
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None and allow_unused:
                    continue
                grads.append(p.grad.data)
                if apply:
                    p.data.add_(p.grad.data, alpha=-(group["lr"] if lr is None else lr))
        return grads


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(28 * 28, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        out = self.fc2(F.relu(self.fc1(x.flatten(1))))
        return {"output": F.log_softmax(out, dim=1)}


class User:
    def __init__(self, id, model, train_data, test_data, batch_size=16, learning_rate=0.05, local_epochs=1, K=3):
        self.model = copy.deepcopy(model)
        self.id = id
        self.batch_size = batch_size
        self.local_epochs = local_epochs
        self.K = K
        self.trainloader = DataLoader(train_data, batch_size, shuffle=True, drop_last=True)
        self.testloaderfull = DataLoader(test_data, len(test_data))
        self.iter_trainloader = iter(self.trainloader)
        self.loss = nn.NLLLoss()
        self.optimizer = pFedIBOptimizer(self.model.parameters(), lr=learning_rate)
        self.lr_scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer=self.optimizer, gamma=0.99)

    def set_parameters(self, model):
        for old_param, new_param in zip(self.model.parameters(), model.parameters()):
            old_param.data = new_param.data.clone()

    def test(self):
        self.model.eval()
        test_acc = 0
        loss = 0
        for x, y in self.testloaderfull:
            output = self.model(x)["output"]
            loss += self.loss(output, y)
            test_acc += (torch.sum(torch.argmax(output, dim=1) == y)).item()
        return test_acc, loss, y.shape[0]

    def get_next_train_batch(self):
        try:
            (X, y) = next(self.iter_trainloader)
        except StopIteration:
            self.iter_trainloader = iter(self.trainloader)
            (X, y) = next(self.iter_trainloader)
        return {"X": X, "y": y}

    def train(self, glob_iter, lr_decay=True):
        self.model.train()
        for _epoch in range(1, self.local_epochs + 1):
            self.model.train()
            for _i in range(self.K):
                result = self.get_next_train_batch()
                X, y = result["X"], result["y"]
                self.optimizer.zero_grad()
                output = self.model(X)["output"]
                loss = self.loss(output, y)
                loss.backward()
                self.optimizer.step()
        if lr_decay:
            self.lr_scheduler.step()


class Server:
    def __init__(self, model, users, num_glob_iters):
        self.model = copy.deepcopy(model)
        self.users = users
        self.selected_users = users
        self.num_glob_iters = num_glob_iters
        self.metrics = {"glob_acc": [], "glob_loss": []}

    def send_parameters(self):
        for user in self.selected_users:
            user.set_parameters(self.model)

    def aggregate_parameters(self):
        total_train = sum(len(user.trainloader.dataset) for user in self.selected_users)
        for param in self.model.parameters():
            param.data = torch.zeros_like(param.data)
        for user in self.selected_users:
            ratio = len(user.trainloader.dataset) / total_train
            for server_param, user_param in zip(self.model.parameters(), user.model.parameters()):
                server_param.data = server_param.data + user_param.data.clone() * ratio

    def test(self):
        num_samples, tot_correct, losses = [], [], []
        for c in self.users:
            ct, c_loss, ns = c.test()
            tot_correct.append(ct * 1.0)
            num_samples.append(ns)
            losses.append(c_loss)
        ids = [c.id for c in self.users]
        return ids, num_samples, tot_correct, losses

    def evaluate(self):
        _, test_samples, test_accs, test_losses = self.test()
        glob_acc = np.sum(test_accs) * 1.0 / np.sum(test_samples)
        glob_loss = np.sum([x * y for (x, y) in zip(test_samples, test_losses)]).item() / np.sum(test_samples)
        self.metrics["glob_acc"].append(glob_acc)
        self.metrics["glob_loss"].append(glob_loss)
        print(f"Average Global Accurancy = {glob_acc:.4f}, Loss = {glob_loss:.2f}.")

    def train(self):
        for glob_iter in range(self.num_glob_iters):
            print("\n\n-------------Round number: ", glob_iter, " -------------\n\n")
            self.send_parameters()
            self.evaluate()
            for user in self.selected_users:
                user.train(glob_iter)
            self.aggregate_parameters()


def main():
    torch.manual_seed(0)
    model = Net()
    x = torch.rand(96, 1, 28, 28)
    y = torch.randint(0, 10, (96,))
    users = [User("f_00000", model, TensorDataset(x[:64], y[:64]), TensorDataset(x[64:], y[64:]))]
    server = Server(model, users, num_glob_iters=3)
    server.train()


if __name__ == "__main__":
    main()
