"""RLHF with PPO (trl 0.x ``PPOTrainer``) against the user's own reward model.

Reduced from https://github.com/huggingface/trl/issues/130: the author
fine-tunes a causal LM with a value head using trl's ``PPOTrainer``
(``step(query_tensors, response_tensors, scores)``, several PPO epochs of
minibatches per step, KL penalty against a frozen reference copy). Instead of
the sentiment pipeline of the example notebook, the scores come from the
author's own reward model, a small sequence classifier run on query +
response. The report shows the traceback only (at the trainer's backward in
``train_minibatch``, on the second minibatch); the user loop below is a
reconstruction of trl's example loop with such a reward model. Here: GRU
models on random tokens; the trainer's code is trl's ``step`` /
``batched_forward_pass`` / ``compute_rewards`` / ``loss`` trimmed to CPU.
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, QUERY_LEN, RESP_LEN = 30, 6, 5


class GRULMHeadWithValueModel(nn.Module):
    def __init__(self, vocab=VOCAB, dim=32):
        super().__init__()
        self.transformer = nn.GRU(dim, dim, batch_first=True)
        self.wte = nn.Embedding(vocab, dim)
        self.lm_head = nn.Linear(dim, vocab)
        self.v_head = nn.Linear(dim, 1)

    def forward(self, input_ids):
        hidden, _ = self.transformer(self.wte(input_ids))
        return self.lm_head(hidden), hidden, self.v_head(hidden).squeeze(-1)


class RewardModel(nn.Module):
    def __init__(self, vocab=VOCAB, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.encoder = nn.GRU(dim, dim, batch_first=True)
        self.score = nn.Linear(dim, 1)

    def forward(self, input_ids):
        _, h = self.encoder(self.embed(input_ids))
        return self.score(h[-1]).squeeze(-1)


def respond_to_batch(model, queries, txt_len=RESP_LEN, top_p=1.0):
    """Sample a response of txt_len tokens for each query."""
    input_ids = queries
    with torch.no_grad():
        for _ in range(txt_len):
            logits, _, _ = model(input_ids)
            probs = F.softmax(logits[:, -1, :], dim=-1)
            next_token = torch.multinomial(probs, num_samples=1)
            input_ids = torch.cat([input_ids, next_token], dim=-1)
    return input_ids[:, -txt_len:]


def logprobs_from_logits(logits, labels):
    logp = F.log_softmax(logits, dim=2)
    return torch.gather(logp, 2, labels.unsqueeze(2)).squeeze(-1)


def whiten(values, shift_mean=True):
    mean, var = torch.mean(values), torch.var(values, unbiased=False)
    whitened = (values - mean) * torch.rsqrt(var + 1e-8)
    if not shift_mean:
        whitened += mean
    return whitened


def clip_by_value(x, tensor_min, tensor_max):
    return torch.max(torch.min(x, tensor_max), tensor_min)


DEFAULT_PPO_PARAMS = {
    "lr": 1.41e-5,
    "init_kl_coef": 0.2,
    "gamma": 1,
    "lam": 0.95,
    "cliprange": 0.2,
    "cliprange_value": 0.2,
    "vf_coef": 0.1,
    "batch_size": 4,
    "ppo_epochs": 2,
}


class PPOTrainer:
    def __init__(self, model, ref_model, **ppo_params):
        self.ppo_params = dict(DEFAULT_PPO_PARAMS, **ppo_params)
        self.model = model
        self.ref_model = ref_model
        self.optimizer = torch.optim.Adam(model.parameters(), lr=self.ppo_params["lr"])
        self.kl_coef = self.ppo_params["init_kl_coef"]

    def step(self, queries, responses, scores):
        bs = self.ppo_params["batch_size"]
        logprobs, ref_logprobs, values = self.batched_forward_pass(queries, responses)
        rewards, non_score_reward = self.compute_rewards(scores, logprobs, ref_logprobs)

        all_stats = []
        for _ in range(self.ppo_params["ppo_epochs"]):
            idxs = torch.randperm(bs).tolist()
            for i in range(bs):
                idx = idxs[i]
                train_stats = self.train_minibatch(
                    logprobs[idx : idx + 1],
                    values[idx : idx + 1],
                    rewards[idx : idx + 1],
                    queries[idx : idx + 1],
                    responses[idx : idx + 1],
                    torch.cat([queries[idx : idx + 1], responses[idx : idx + 1]], dim=1),
                )
                all_stats.append(train_stats)
        return {"objective/kl": (logprobs - ref_logprobs).sum(-1).mean().item(), "ppo/loss": all_stats[-1]}

    def batched_forward_pass(self, queries, responses):
        gen_len = responses.shape[1]
        model_input = torch.cat([queries, responses], dim=1)
        with torch.no_grad():
            logits, _, v = self.model(model_input)
            ref_logits, _, _ = self.ref_model(model_input)
        logprobs = logprobs_from_logits(logits[:, :-1, :], model_input[:, 1:])
        ref_logprobs = logprobs_from_logits(ref_logits[:, :-1, :], model_input[:, 1:])
        return logprobs[:, -gen_len:], ref_logprobs[:, -gen_len:], v[:, -gen_len - 1 : -1]

    def train_minibatch(self, logprobs, values, rewards, query, response, model_input):
        loss = self.loss(logprobs, values, rewards, query, response, model_input)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def compute_rewards(self, scores, logprobs, ref_logprobs):
        kl = logprobs - ref_logprobs
        non_score_reward = -self.kl_coef * kl
        rewards = non_score_reward.clone().detach()
        rewards[:, -1] += scores
        return rewards, non_score_reward

    def loss(self, old_logprobs, values, rewards, query, response, model_input):
        lastgaelam = 0
        advantages_reversed = []
        gen_len = response.shape[1]
        for t in reversed(range(gen_len)):
            nextvalues = values[:, t + 1] if t < gen_len - 1 else 0.0
            delta = rewards[:, t] + self.ppo_params["gamma"] * nextvalues - values[:, t]
            lastgaelam = delta + self.ppo_params["gamma"] * self.ppo_params["lam"] * lastgaelam
            advantages_reversed.append(lastgaelam)
        advantages = torch.stack(advantages_reversed[::-1]).transpose(0, 1)

        returns = advantages + values
        advantages = whiten(advantages)
        advantages = advantages.detach()

        logits, _, vpred = self.model(model_input)
        logprob = logprobs_from_logits(logits[:, :-1, :], model_input[:, 1:])
        logprob, vpred = logprob[:, -gen_len:], vpred[:, -gen_len - 1 : -1]

        vpredclipped = clip_by_value(
            vpred, values - self.ppo_params["cliprange_value"], values + self.ppo_params["cliprange_value"]
        )
        vf_losses1 = (vpred - returns) ** 2
        vf_losses2 = (vpredclipped - returns) ** 2
        vf_loss = 0.5 * torch.mean(torch.max(vf_losses1, vf_losses2))

        ratio = torch.exp(logprob - old_logprobs)
        pg_losses = -advantages * ratio
        pg_losses2 = -advantages * torch.clamp(
            ratio, 1.0 - self.ppo_params["cliprange"], 1.0 + self.ppo_params["cliprange"]
        )
        pg_loss = torch.mean(torch.max(pg_losses, pg_losses2))
        return pg_loss + self.ppo_params["vf_coef"] * vf_loss


def main():
    gpt2_model = GRULMHeadWithValueModel()
    gpt2_model_ref = copy.deepcopy(gpt2_model)
    reward_model = RewardModel()
    reward_model.eval()

    ppo_trainer = PPOTrainer(gpt2_model, gpt2_model_ref, batch_size=4, ppo_epochs=2, lr=1e-3)

    for epoch in range(5):
        query_tensors = torch.randint(0, VOCAB, (4, QUERY_LEN))
        response_tensors = respond_to_batch(gpt2_model, query_tensors)

        with torch.no_grad():
            scores = reward_model(torch.cat([query_tensors, response_tensors], dim=1))

        stats = ppo_trainer.step(query_tensors, response_tensors, scores)
        print(f"epoch {epoch}: mean score {scores.mean().item():.3f} kl {stats['objective/kl']:.4f}")


if __name__ == "__main__":
    main()
