"""MAML (dragen1860/MAML-Pytorch) meta-training with a single inner update step.

Source: https://github.com/dragen1860/MAML-Pytorch/issues/40 "questions with respect to the no_grad()".
The reporter ran the repository's meta-learner with the number of inner updates set to 1.
Reduced: the Learner is a 2-layer MLP on random 5-way "images" (16 features) instead of the
conv config; ``Meta.forward`` keeps the repository's structure.
Corrected as the answer explains: with one inner step, ``losses_q[-1]`` is the query loss after
the first update, so that loss is computed with grad; only its accuracy stays under no_grad.
"""

import argparse

import numpy as np
import torch
from torch import nn, optim
from torch.nn import functional as F


class Learner(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.vars = nn.ParameterList()
        for name, param in config:
            if name == "linear":
                w = nn.Parameter(torch.ones(*param))
                torch.nn.init.kaiming_normal_(w)
                self.vars.append(w)
                self.vars.append(nn.Parameter(torch.zeros(param[0])))

    def forward(self, x, vars=None, bn_training=True):
        if vars is None:
            vars = self.vars
        idx = 0
        for name, _param in self.config:
            if name == "linear":
                w, b = vars[idx], vars[idx + 1]
                x = F.linear(x, w, b)
                idx += 2
            elif name == "relu":
                x = F.relu(x)
        return x

    def parameters(self):
        return self.vars


class Meta(nn.Module):
    def __init__(self, args, config):
        super().__init__()
        self.update_lr = args.update_lr
        self.meta_lr = args.meta_lr
        self.n_way = args.n_way
        self.task_num = args.task_num
        self.update_step = args.update_step
        self.net = Learner(config)
        self.meta_optim = optim.Adam(self.net.parameters(), lr=self.meta_lr)

    def forward(self, x_spt, y_spt, x_qry, y_qry):
        task_num = x_spt.size(0)
        querysz = x_qry.size(1)

        losses_q = [0 for _ in range(self.update_step + 1)]  # losses_q[i] is the loss on step i
        corrects = [0 for _ in range(self.update_step + 1)]

        for i in range(task_num):
            # 1. run the i-th task and compute loss for k=0
            logits = self.net(x_spt[i], vars=None, bn_training=True)
            loss = F.cross_entropy(logits, y_spt[i])
            grad = torch.autograd.grad(loss, self.net.parameters())
            fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, self.net.parameters())))

            # this is the loss and accuracy before first update
            with torch.no_grad():
                logits_q = self.net(x_qry[i], self.net.parameters(), bn_training=True)
                loss_q = F.cross_entropy(logits_q, y_qry[i])
                losses_q[0] += loss_q
                pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
                correct = torch.eq(pred_q, y_qry[i]).sum().item()
                corrects[0] = corrects[0] + correct

            # this is the loss and accuracy after the first update
            logits_q = self.net(x_qry[i], fast_weights, bn_training=True)
            loss_q = F.cross_entropy(logits_q, y_qry[i])
            losses_q[1] += loss_q
            with torch.no_grad():
                pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
                correct = torch.eq(pred_q, y_qry[i]).sum().item()
                corrects[1] = corrects[1] + correct

            for k in range(1, self.update_step):
                # 1. run the i-th task and compute loss for k=1~K-1
                logits = self.net(x_spt[i], fast_weights, bn_training=True)
                loss = F.cross_entropy(logits, y_spt[i])
                # 2. compute grad on theta_pi
                grad = torch.autograd.grad(loss, fast_weights)
                # 3. theta_pi = theta_pi - train_lr * grad
                fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, fast_weights)))

                logits_q = self.net(x_qry[i], fast_weights, bn_training=True)
                # loss_q will be overwritten and just keep the loss_q on last update step.
                loss_q = F.cross_entropy(logits_q, y_qry[i])
                losses_q[k + 1] += loss_q

                with torch.no_grad():
                    pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
                    correct = torch.eq(pred_q, y_qry[i]).sum().item()
                    corrects[k + 1] = corrects[k + 1] + correct

        # end of all tasks
        # sum over all losses on query set across all tasks
        loss_q = losses_q[-1] / task_num

        # optimize theta parameters
        self.meta_optim.zero_grad()
        loss_q.backward()
        self.meta_optim.step()

        accs = np.array(corrects) / (querysz * task_num)
        return accs


def sample_tasks(args, centers):
    """task_num tasks of n_way classes drawn from the class centers, k_spt + k_qry samples per class."""
    x_spt, y_spt, x_qry, y_qry = [], [], [], []
    for _ in range(args.task_num):
        classes = torch.randperm(centers.size(0))[: args.n_way]
        xs, ys, xq, yq = [], [], [], []
        for label, c in enumerate(classes):
            xs.append(centers[c] + 0.5 * torch.randn(args.k_spt, centers.size(1)))
            xq.append(centers[c] + 0.5 * torch.randn(args.k_qry, centers.size(1)))
            ys += [label] * args.k_spt
            yq += [label] * args.k_qry
        x_spt.append(torch.cat(xs))
        y_spt.append(torch.tensor(ys))
        x_qry.append(torch.cat(xq))
        y_qry.append(torch.tensor(yq))
    return torch.stack(x_spt), torch.stack(y_spt), torch.stack(x_qry), torch.stack(y_qry)


def main(args):
    torch.manual_seed(222)
    np.random.seed(222)
    config = [("linear", [32, 16]), ("relu", [True]), ("linear", [args.n_way, 32])]
    maml = Meta(args, config)
    centers = torch.randn(20, 16)
    for step in range(args.epoch):
        x_spt, y_spt, x_qry, y_qry = sample_tasks(args, centers)
        accs = maml(x_spt, y_spt, x_qry, y_qry)
        print("step:", step, "\ttraining acc:", accs)


if __name__ == "__main__":
    argparser = argparse.ArgumentParser()
    argparser.add_argument("--epoch", type=int, help="epoch number", default=5)
    argparser.add_argument("--n_way", type=int, help="n way", default=5)
    argparser.add_argument("--k_spt", type=int, help="k shot for support set", default=1)
    argparser.add_argument("--k_qry", type=int, help="k shot for query set", default=5)
    argparser.add_argument("--task_num", type=int, help="meta batch size, namely task num", default=4)
    argparser.add_argument("--meta_lr", type=float, help="meta-level outer learning rate", default=1e-3)
    argparser.add_argument("--update_lr", type=float, help="task-level inner update learning rate", default=0.4)
    argparser.add_argument("--update_step", type=int, help="task-level inner update steps", default=1)
    main(argparser.parse_args([]))
