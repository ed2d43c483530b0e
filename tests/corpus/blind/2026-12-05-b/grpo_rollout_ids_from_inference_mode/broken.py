"""GRPO fine-tuning of a small causal LM: sample completions, score them, update on group-relative advantages.

Source: https://github.com/jingyaogong/minimind/issues/754 "4卡 GRPO训练时侯报错的修改"
(GRPO training error on 4 GPUs, and its fix).
The reporter ran MiniMind's ``trainer/train_grpo.py``: completions are sampled with the model's
``generate`` and the policy's log-probabilities are then recomputed with grad on the sampled ids
(``res = model_unwrapped(outputs, attention_mask=full_mask)``). Reduced: a 1-layer causal
transformer, integer "prompts", a reward that counts one token, one GPU-free process.
"""

import copy
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from torch.optim.lr_scheduler import CosineAnnealingLR


@dataclass
class Args:
    vocab_size: int = 24
    hidden_size: int = 32
    batch_size: int = 2
    num_generations: int = 4
    max_gen_len: int = 6
    prompt_len: int = 4
    learning_rate: float = 1e-3
    beta: float = 0.1
    epsilon: float = 0.2
    steps: int = 6


class MiniMindForCausalLM(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.embed_tokens = nn.Embedding(args.vocab_size, args.hidden_size)
        layer = nn.TransformerEncoderLayer(args.hidden_size, 4, 2 * args.hidden_size, dropout=0.0, batch_first=True)
        self.layers = nn.TransformerEncoder(layer, num_layers=1)
        self.lm_head = nn.Linear(args.hidden_size, args.vocab_size, bias=False)

    def forward(self, input_ids):
        t = input_ids.size(1)
        mask = torch.triu(torch.full((t, t), float("-inf")), 1)
        h = self.layers(self.embed_tokens(input_ids), mask=mask, is_causal=True)
        return self.lm_head(h)

    @torch.inference_mode()
    def generate(self, input_ids, max_new_tokens, temperature=0.8, num_return_sequences=1):
        input_ids = input_ids.repeat_interleave(num_return_sequences, dim=0)
        for _ in range(max_new_tokens):
            logits = self(input_ids)[:, -1, :] / temperature
            next_token = torch.multinomial(F.softmax(logits, dim=-1), num_samples=1)
            input_ids = torch.cat([input_ids, next_token], dim=1)
        return input_ids


def per_token_logps_of(logits, ids, n_keep):
    logps = F.log_softmax(logits[:, :-1, :], dim=-1).gather(2, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return logps[:, -n_keep:]


def calculate_rewards(completion_ids, target_token=7):
    return (completion_ids == target_token).float().sum(dim=1)


def grpo_train_epoch(args, model, ref_model, optimizer, scheduler, prompts):
    for step in range(args.steps):
        prompt_ids = prompts[torch.randint(0, prompts.size(0), (args.batch_size,))]
        with torch.no_grad():
            outputs = model.generate(
                prompt_ids, max_new_tokens=args.max_gen_len, num_return_sequences=args.num_generations
            )
            old_per_token_logps = per_token_logps_of(model(outputs), outputs, args.max_gen_len).detach()
        completion_ids = outputs[:, args.prompt_len :]
        rewards = calculate_rewards(completion_ids)  # [B*num_gen]

        res = model(outputs)
        per_token_logps = per_token_logps_of(res, outputs, args.max_gen_len)
        with torch.no_grad():
            ref_per_token_logps = per_token_logps_of(ref_model(outputs), outputs, args.max_gen_len)

        grouped_rewards = rewards.view(-1, args.num_generations)  # [B, num_gen]
        mean_r = grouped_rewards.mean(dim=1).repeat_interleave(args.num_generations)
        std_r = grouped_rewards.std(dim=1, unbiased=False).repeat_interleave(args.num_generations)
        advantages = (rewards - mean_r) / (std_r + 1e-4)  # [B*num_gen]

        kl_div = ref_per_token_logps - per_token_logps
        per_token_kl = torch.exp(kl_div) - kl_div - 1
        ratio = torch.exp(per_token_logps - old_per_token_logps)
        clipped_ratio = torch.clamp(ratio, 1 - args.epsilon, 1 + args.epsilon)
        per_token_loss1 = ratio * advantages.unsqueeze(1)
        per_token_loss2 = clipped_ratio * advantages.unsqueeze(1)
        per_token_loss = -(torch.min(per_token_loss1, per_token_loss2) - args.beta * per_token_kl)
        policy_loss = per_token_loss.mean()
        loss = policy_loss
        loss.backward()

        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        print(f"step {step} reward {rewards.mean().item():.3f} loss {loss.item():.4f}")


if __name__ == "__main__":
    args = Args()
    torch.manual_seed(42)
    model = MiniMindForCausalLM(args)
    ref_model = copy.deepcopy(model).eval().requires_grad_(False)
    optimizer = optim.AdamW(model.parameters(), lr=args.learning_rate)
    scheduler = CosineAnnealingLR(optimizer, T_max=args.steps)
    prompts = torch.randint(0, args.vocab_size, (16, args.prompt_len))
    grpo_train_epoch(args, model, ref_model, optimizer, scheduler, prompts)
