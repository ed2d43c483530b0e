"""Insulin dosing: a one-step actor-critic that proposes a bolus from the glucose trace.

Source: https://discuss.pytorch.org/t/runtimeerror-one-of-the-variables-needed-for-gradient-computation-has-been-modified-by-an-inplace-operation-torch-floattensor-64-1-which-is-output-0-of-asstridedbackward0-is-at-version-3-expected-version-2-instead-hint-the-backtrace-further-a/171826
The author's actor-critic built the actor's loss from the critic's TD error. Backwarding the
critic loss first freed the shared graph, so ``actor_loss.backward()`` failed; with
``retain_graph=True`` on the critic's backward the error became "modified by an inplace operation",
because ``critic_optimizer.step()`` updates the critic's weights in place between the two backwards
and the actor's backward still runs through the critic's graph. The advice in the thread: the
actor's TD error is a constant weight (detach it), or sum the losses before one backward.

Reduction: a patient state (last hour of CGM readings, carbs on board, insulin on board) goes to a
Gaussian dosing policy and a value critic; the simulated glucose response gives a time-in-range
reward; the critic learns the TD target and the actor is weighted by the TD error.
"""
import torch
import torch.nn as nn

torch.manual_seed(21)

HP = {"cgm_len": 12, "batch": 32, "iters": 6, "gamma": 0.9, "actor_lr": 5e-4, "critic_lr": 1e-3,
      "target_low": 3.9, "target_high": 10.0}


class VirtualPatient:
    """Very small glucose-insulin response: bolus lowers glucose, carbs raise it."""

    def __init__(self, batch, cgm_len):
        self.cgm = 6.0 + 2.0 * torch.randn(batch, cgm_len)
        self.carbs = torch.rand(batch, 1) * 60
        self.iob = torch.rand(batch, 1) * 2

    def state(self):
        return torch.cat([self.cgm / 10.0, self.carbs / 60.0, self.iob / 5.0], dim=1)

    def respond(self, bolus):
        sensitivity = 1.8
        nxt = self.cgm[:, -1:] + 0.05 * self.carbs - sensitivity * (bolus + 0.3 * self.iob)
        nxt = nxt + 0.2 * torch.randn_like(nxt)
        self.cgm = torch.cat([self.cgm[:, 1:], nxt], dim=1)
        self.iob = 0.7 * self.iob + bolus
        self.carbs = 0.5 * self.carbs
        return nxt


def time_in_range_reward(glucose, hp):
    low_pen = torch.relu(hp["target_low"] - glucose) * 3.0
    high_pen = torch.relu(glucose - hp["target_high"])
    return 1.0 - low_pen - high_pen


class DosingPolicy(nn.Module):
    def __init__(self, n_in):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_in, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
        self.mu = nn.Linear(64, 1)
        self.log_std = nn.Parameter(torch.full((1,), -0.5))

    def forward(self, s):
        return torch.distributions.Normal(self.mu(self.body(s)), self.log_std.exp())


class GlucoseCritic(nn.Module):
    def __init__(self, n_in):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_in, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, s):
        return self.net(s)


def main(hp=HP):
    patient = VirtualPatient(hp["batch"], hp["cgm_len"])
    n_in = hp["cgm_len"] + 2
    actor, critic = DosingPolicy(n_in), GlucoseCritic(n_in)
    actor_optimizer = torch.optim.Adam(actor.parameters(), lr=hp["actor_lr"])
    critic_optimizer = torch.optim.Adam(critic.parameters(), lr=hp["critic_lr"])

    for it in range(hp["iters"]):
        s = patient.state()
        dist = actor(s)
        bolus = dist.sample().clamp(min=0.0)
        glucose = patient.respond(bolus)
        reward = time_in_range_reward(glucose, hp)
        s_next = patient.state()

        value = critic(s)
        with torch.no_grad():
            target = reward + hp["gamma"] * critic(s_next)
        td_error = target - value

        critic_loss = td_error.pow(2).mean()
        critic_optimizer.zero_grad()
        critic_loss.backward()
        critic_optimizer.step()

        actor_loss = -(dist.log_prob(bolus) * td_error.detach()).mean()
        actor_optimizer.zero_grad()
        actor_loss.backward()
        actor_optimizer.step()
        print(f"iter {it}: critic {critic_loss.item():.3f} actor {actor_loss.item():.3f}")


if __name__ == "__main__":
    main()
