"""Fitting a Normal distribution to a target by minimising a sampled KL, with a log-parametrised std.

Source: https://discuss.pytorch.org/t/defining-parameters-by-some-transformation-or-retaining-sub-graphs-but-not-the-whole-graph/50139
"Defining parameters by some transformation OR Retaining sub-graphs, but not the whole graph".
The author (Bayesian ML) optimised the mean and the log of the standard deviation of a
torch.distributions.Normal, wanting to refer only to the distribution object in the loop.
"""

import torch
import torch.distributions as dd
import torch.nn as nn

torch.manual_seed(0)

log_std = nn.Parameter(torch.Tensor([1]))  # the log of the parameter is what we optimise
std = torch.exp(log_std)  # the transformation applied to the parameter
mean = nn.Parameter(torch.Tensor([1]))
dist = dd.Normal(loc=mean, scale=std)  # from here on, only refer to the distribution

optim = torch.optim.SGD(
    [log_std, mean], lr=1e-4
)  # 0.01 in the report; lowered so that 50 steps of the summed cost stay finite
target = dd.Normal(5, 5)  # target distribution to match

for i in range(50):
    samples = dist.rsample((1000,))  # sample the model, no reference to log_std
    cost = -(target.log_prob(samples) - dist.log_prob(samples)).sum()  # KL divergence cost
    cost.backward()
    optim.step()
    print(i)
    print(log_std, mean, cost)
    print()
