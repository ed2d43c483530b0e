"""Test-kit allocation policy trained by REINFORCE, corrected: the no-grad logger no longer fills the cache.

Reduced from pytorch/pytorch issue #10207, "a strange torch.no_grad behaviour when used
with lazy_property from distributions" (https://github.com/pytorch/pytorch/issues/10207).

The author built ``OneHotCategorical(probs)`` from ``F.softmax(scores)``, sampled an
action and backpropagated ``cat.log_prob(sample).sum()``. Merely printing
``cat.logits.requires_grad`` inside ``with torch.no_grad():`` before the loss made
``backward()`` fail with "RuntimeError: element 0 of tensors does not require grad and
does not have a grad_fn": ``logits`` is a ``lazy_property``, computed once on first
access and then stored on the object, so the first access under ``no_grad`` cached a
tensor with no history, and every later use (log_prob included) read that cached,
graph-less tensor. The report reproduces it with a plain user class carrying a
``lazy_property`` too. The maintainers' fix (pull request #7708, "Always enable grad
when calculating lazy_property") computes the cached value under ``torch.enable_grad()``
so that a first access inside ``no_grad`` still records the graph.

Here a policy network scores districts for where to send the next batch of test kits
from their recent case counts, test positivity and mobility; an action distribution
object with a user-written ``lazy_property`` for its log-probabilities is built from the
scores each step. A monitoring callback logs the policy entropy under ``torch.no_grad()``
before the REINFORCE loss is formed, which touches the cached log-probabilities first.
"""
import torch
import torch.nn as nn

torch.manual_seed(10207)

HPARAMS = {
    "districts": 6,
    "features": 4,
    "hidden": 32,
    "episodes_per_batch": 24,
    "batches": 4,
    "epochs": 3,
    "lr": 5e-3,
}


class lazy_property:
    """Compute once on first access, then store the value on the instance."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = self.fn(instance)
        setattr(instance, self.fn.__name__, value)
        return value


class AllocationDistribution:
    """One-hot categorical over districts, built from the policy's scores."""

    def __init__(self, scores):
        self.scores = scores

    @lazy_property
    def log_probs(self):
        return torch.log_softmax(self.scores, dim=-1)

    def sample(self):
        idx = torch.multinomial(self.log_probs.detach().exp(), 1).squeeze(-1)
        return nn.functional.one_hot(idx, self.scores.shape[-1]).float()

    def log_prob(self, one_hot):
        return (one_hot * self.log_probs).sum(-1)

    def entropy(self):
        return -(self.log_probs.exp() * self.log_probs).sum(-1)


class KitPolicy(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.score = nn.Sequential(
            nn.Linear(features, hidden), nn.Tanh(), nn.Linear(hidden, 1)
        )

    def forward(self, district_features):
        # district_features: (episodes, districts, features) -> scores (episodes, districts)
        return self.score(district_features).squeeze(-1)


def simulate_week(hp):
    """Synthetic surveillance snapshot and the true hidden prevalence per district."""
    feats = torch.randn(hp["episodes_per_batch"], hp["districts"], hp["features"])
    prevalence = torch.sigmoid(1.5 * feats[..., 0] + 0.8 * feats[..., 1] - 0.5)
    return feats, prevalence


def log_policy_entropy(dist, history):
    # Monitor from a detached copy of the scores, leaving dist's cache untouched.
    with torch.no_grad():
        logp = torch.log_softmax(dist.scores.detach(), dim=-1)
        history.append(-(logp.exp() * logp).sum(-1).mean().item())


def main():
    hp = HPARAMS
    policy = KitPolicy(hp["features"], hp["hidden"])
    optimizer = torch.optim.Adam(policy.parameters(), lr=hp["lr"])
    entropy_history = []
    baseline = 0.0

    for epoch in range(hp["epochs"]):
        for b in range(hp["batches"]):
            feats, prevalence = simulate_week(hp)
            dist = AllocationDistribution(policy(feats))
            log_policy_entropy(dist, entropy_history)

            action = dist.sample()
            detected = (action * prevalence).sum(-1)  # positives found by the kits
            advantage = detected - baseline
            baseline = 0.9 * baseline + 0.1 * detected.mean().item()

            loss = -(advantage * dist.log_prob(action)).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: detected {detected.mean().item():.3f} "
              f"entropy {entropy_history[-1]:.3f}")


if __name__ == "__main__":
    main()
