"""Multi-agent forklift coordination in a warehouse aisle network with MADDPG (one actor and
one centralised critic per forklift), where the critic update was moved ahead of the actor
update.

Source: https://github.com/starry-sky6688/MADDPG/issues/27
"大佬请问这边当我先更新critic时再更新actor（论文是这样的）这个会报因为inplace操作导致梯度的更新失败"
("when I update the critic first and then the actor, as in the paper, I get a gradient
failure caused by an inplace operation"; starry-sky6688/MADDPG issue #27).

In the repository's ``MADDPG.train`` both losses are built first -- ``critic_loss`` from
``critic_network(o, u)`` and ``actor_loss = -critic_network(o, u_with_new_action).mean()`` --
and then the actor is stepped before the critic.  The report's author swapped the two update
blocks to follow the paper (critic, then actor) and got "one of the variables needed for
gradient computation has been modified by an inplace operation": ``critic_optim.step()``
rewrites the critic's weights in place, and ``actor_loss`` was built through those very
weights.  The maintainer answers "try putting the critic update here" (the place is in a
screenshot) and explains that ``actor_loss`` was computed through ``critic_network``, which the
critic update then changes, so its gradient is stale in PyTorch's eyes.  The fix that keeps the
paper's order the author wanted is to update the critic right after its loss is computed and to
build the actor loss afterwards, from the updated critic.

Reduction: the repository's Actor/Critic/MADDPG classes (target networks, soft updates, one
Adam per network), three forklift agents with small observation and action vectors, and a
synthetic replay buffer of joint transitions drawn with torch; ``train`` has the report's
order: losses first, then critic step, then actor backward.
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(27)

HPARAMS = {
    "n_agents": 3,
    "obs_shape": [10, 10, 10],
    "action_shape": [2, 2, 2],
    "high_action": 1.0,
    "lr_actor": 1e-3,
    "lr_critic": 1e-3,
    "gamma": 0.95,
    "tau": 0.01,
    "buffer_size": 512,
    "batch_size": 32,
    "train_steps": 4,
}


class Actor(nn.Module):
    def __init__(self, args, agent_id):
        super().__init__()
        self.max_action = args["high_action"]
        self.fc1 = nn.Linear(args["obs_shape"][agent_id], 64)
        self.fc2 = nn.Linear(64, 64)
        self.action_out = nn.Linear(64, args["action_shape"][agent_id])

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.max_action * torch.tanh(self.action_out(x))


class Critic(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.max_action = args["high_action"]
        self.fc1 = nn.Linear(sum(args["obs_shape"]) + sum(args["action_shape"]), 64)
        self.fc2 = nn.Linear(64, 64)
        self.q_out = nn.Linear(64, 1)

    def forward(self, state, action):
        state = torch.cat(state, dim=1)
        action = torch.cat([a / self.max_action for a in action], dim=1)
        x = torch.cat([state, action], dim=1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.q_out(x)


class MADDPG:
    def __init__(self, args, agent_id):
        self.args = args
        self.agent_id = agent_id
        self.train_step = 0
        self.actor_network = Actor(args, agent_id)
        self.critic_network = Critic(args)
        self.actor_target_network = copy.deepcopy(self.actor_network)
        self.critic_target_network = copy.deepcopy(self.critic_network)
        self.actor_optim = torch.optim.Adam(self.actor_network.parameters(), lr=args["lr_actor"])
        self.critic_optim = torch.optim.Adam(self.critic_network.parameters(), lr=args["lr_critic"])

    def _soft_update_target_network(self):
        tau = self.args["tau"]
        for target, net in ((self.actor_target_network, self.actor_network),
                            (self.critic_target_network, self.critic_network)):
            for target_param, param in zip(target.parameters(), net.parameters()):
                target_param.data.copy_((1 - tau) * target_param.data + tau * param.data)

    def train(self, transitions, other_agents):
        n = self.args["n_agents"]
        r = transitions["r_%d" % self.agent_id]
        o = [transitions["o_%d" % i] for i in range(n)]
        u = [transitions["u_%d" % i] for i in range(n)]
        o_next = [transitions["o_next_%d" % i] for i in range(n)]

        with torch.no_grad():
            u_next = []
            index = 0
            for agent_id in range(n):
                if agent_id == self.agent_id:
                    u_next.append(self.actor_target_network(o_next[agent_id]))
                else:
                    u_next.append(other_agents[index].policy.actor_target_network(o_next[agent_id]))
                    index += 1
            q_next = self.critic_target_network(o_next, u_next)
            target_q = r.unsqueeze(1) + self.args["gamma"] * q_next

        # the q loss
        q_value = self.critic_network(o, u)
        critic_loss = (target_q - q_value).pow(2).mean()

        # the actor loss: re-pick this agent's action, keep the others' actions
        u = list(u)
        u[self.agent_id] = self.actor_network(o[self.agent_id])
        actor_loss = -self.critic_network(o, u).mean()

        # update the critic first, then the actor, as in the paper
        self.critic_optim.zero_grad()
        critic_loss.backward()
        self.critic_optim.step()
        self.actor_optim.zero_grad()
        actor_loss.backward()
        self.actor_optim.step()

        self._soft_update_target_network()
        self.train_step += 1
        return critic_loss.item(), actor_loss.item()


class Agent:
    def __init__(self, agent_id, args):
        self.agent_id = agent_id
        self.policy = MADDPG(args, agent_id)

    def learn(self, transitions, other_agents):
        return self.policy.train(transitions, other_agents)


def make_buffer(args):
    """Joint transitions of three forklifts: aisle positions, loads and goals, plus rewards."""
    size = args["buffer_size"]
    buf = {}
    for i in range(args["n_agents"]):
        obs = torch.randn(size, args["obs_shape"][i])
        act = torch.tanh(torch.randn(size, args["action_shape"][i]))
        nxt = obs + 0.1 * torch.cat([act, torch.zeros(size, args["obs_shape"][i] - 2)], 1)
        buf["o_%d" % i] = obs
        buf["u_%d" % i] = act
        buf["o_next_%d" % i] = nxt + 0.05 * torch.randn_like(nxt)
        buf["r_%d" % i] = -(nxt[:, :2] - obs[:, 2:4]).norm(dim=1)
    return buf


def sample(buffer, batch_size):
    idx = torch.randint(0, next(iter(buffer.values())).shape[0], (batch_size,))
    return {k: v[idx] for k, v in buffer.items()}


def main():
    args = HPARAMS
    buffer = make_buffer(args)
    agents = [Agent(i, args) for i in range(args["n_agents"])]
    for step in range(args["train_steps"]):
        transitions = sample(buffer, args["batch_size"])
        for agent in agents:
            other_agents = [a for a in agents if a is not agent]
            q_loss, a_loss = agent.learn(transitions, other_agents)
            print(f"step {step} agent {agent.agent_id} critic {q_loss:.4f} actor {a_loss:.4f}")


if __name__ == "__main__":
    main()
