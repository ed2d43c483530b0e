"""Per-campaign click-through-rate adaptation with MAML; fast weights copied into the model.

Source: PyTorch forum thread "Understanding load_state_dict() effect on computational
graph", https://discuss.pytorch.org/t/understanding-load-state-dict-effect-on-computational-graph/16115
(opened at /16115/6).

The author was replicating MAML: take an inner gradient step on a task's support set,
put the adapted ("fast") weights into the network, evaluate the query set, and
backpropagate the query loss to the original weights for the second-order meta-gradient.
They moved the fast weights into the network with ``load_state_dict()`` and asked what
that does to the graph: it copies values into the parameters, so the link from the
query loss back through the inner step is lost.  The evident intent is a query forward
that uses the fast weights as tensors of the graph (a functional forward), so the
meta-gradient flows through the inner update.

Reduction: a CTR model for ad campaigns is meta-trained over campaigns.  The helper that
"loads" the fast weights does it by hand with ``param.copy_(fast)``, i.e. load_state_dict
without its no_grad guard, on parameters that are leaves requiring grad, so the first
meta-iteration fails with "a leaf Variable that requires grad is being used in an
in-place operation".  Adam is the meta-optimizer over the whole model.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

HPARAMS = {
    "n_campaigns": 24,
    "n_features": 10,
    "hidden": 24,
    "support": 16,
    "query": 16,
    "tasks_per_meta_batch": 4,
    "meta_iters": 6,
    "inner_lr": 0.1,
    "meta_lr": 1e-3,
}


def make_campaigns(n_campaigns, d, n_support, n_query):
    """Each campaign has its own click propensity direction over impression features."""
    tasks = []
    for _ in range(n_campaigns):
        w = torch.randn(d)
        x = torch.randn(n_support + n_query, d)
        clicks = (torch.sigmoid(x @ w) > torch.rand(n_support + n_query)).float().unsqueeze(1)
        tasks.append(((x[:n_support], clicks[:n_support]), (x[n_support:], clicks[n_support:])))
    return tasks


class CTRNet(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def load_fast_weights(model, fast_weights):
    """Put the adapted weights into the network (hand-written load_state_dict)."""
    for param, fast in zip(model.parameters(), fast_weights):
        param.copy_(fast)


def adapt_and_query(model, support, query, inner_lr):
    xs, ys = support
    xq, yq = query
    support_loss = F.binary_cross_entropy_with_logits(model(xs), ys)
    grads = torch.autograd.grad(support_loss, list(model.parameters()), create_graph=True)
    fast_weights = [p - inner_lr * g for p, g in zip(model.parameters(), grads)]
    load_fast_weights(model, fast_weights)
    return F.binary_cross_entropy_with_logits(model(xq), yq)


def main():
    tasks = make_campaigns(HPARAMS["n_campaigns"], HPARAMS["n_features"],
                           HPARAMS["support"], HPARAMS["query"])
    model = CTRNet(HPARAMS["n_features"], HPARAMS["hidden"])
    meta_opt = torch.optim.Adam(model.parameters(), lr=HPARAMS["meta_lr"])

    for it in range(HPARAMS["meta_iters"]):
        picks = torch.randperm(len(tasks))[:HPARAMS["tasks_per_meta_batch"]]
        meta_opt.zero_grad()
        query_losses = [adapt_and_query(model, *tasks[i], HPARAMS["inner_lr"]) for i in picks.tolist()]
        meta_loss = torch.stack(query_losses).mean()
        meta_loss.backward()
        meta_opt.step()
        print(f"meta-iter {it}: query bce {meta_loss.item():.4f}")


if __name__ == "__main__":
    main()
