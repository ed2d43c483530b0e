"""DPO fine-tuning of a small causal LM against a frozen reference copy (OpenRLHF-style trainer).

Reduced from https://github.com/OpenRLHF/OpenRLHF/pull/145: the author runs
OpenRLHF's ``DPOTrainer`` on preference pairs (chosen / rejected responses
to the same prompt). The policy and a frozen reference model (a copy of the
SFT model, evaluated under ``torch.no_grad``) each give the summed log-probs
of both responses; ``DPOLoss`` turns them into the DPO objective and the
implicit rewards that are logged. Here: a GRU language model on random
token sequences, one Adam optimizer.
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, PROMPT_LEN, RESP_LEN = 40, 6, 8


class TinyCausalLM(nn.Module):
    def __init__(self, vocab=VOCAB, dim=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, ids):
        h, _ = self.rnn(self.embed(ids))
        return self.lm_head(h)


class DPOLoss(nn.Module):
    """DPO Loss"""

    def __init__(self, beta: float) -> None:
        super().__init__()
        self.beta = beta

    def forward(self, policy_chosen_logps, policy_rejected_logps, reference_chosen_logps, reference_rejected_logps):
        pi_logratios = policy_chosen_logps - policy_rejected_logps
        ref_logratios = reference_chosen_logps - reference_rejected_logps

        logits = pi_logratios - ref_logratios
        losses = -F.logsigmoid(self.beta * logits)
        chosen_rewards = self.beta * (policy_chosen_logps - reference_chosen_logps).detach()
        rejected_rewards = self.beta * (policy_rejected_logps - reference_rejected_logps).detach()

        return losses, chosen_rewards, rejected_rewards


def sequence_logps(model, ids, mask):
    """Sum of log p(token) over the response tokens (mask == 1) of each sequence."""
    logits = model(ids[:, :-1])
    logps = torch.gather(logits.log_softmax(-1), 2, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return (logps * mask[:, 1:]).sum(-1)


class DPOTrainer:
    def __init__(self, model, ref_model, optimizer, beta=0.1, max_norm=1.0):
        self.model = model
        self.ref_model = ref_model
        self.optimizer = optimizer
        self.beta = beta
        self.max_norm = max_norm
        self.loss_fn = DPOLoss(self.beta)

    def concatenated_forward(self, model, chosen_ids, c_mask, reject_ids, r_mask):
        ids = torch.cat([chosen_ids, reject_ids], dim=0)
        mask = torch.cat([c_mask, r_mask], dim=0)
        logps = sequence_logps(model, ids, mask)
        n = chosen_ids.shape[0]
        return logps[:n], logps[n:]

    def fit(self, dataloader, epochs=2):
        loss_mean = 0.0
        for epoch in range(epochs):
            self.model.train()
            self.ref_model.eval()
            for chosen_ids, c_mask, reject_ids, r_mask in dataloader:
                chosen_logps, rejected_logps = self.concatenated_forward(
                    self.model, chosen_ids, c_mask, reject_ids, r_mask
                )
                with torch.no_grad():
                    reference_chosen_logps, reference_rejected_logps = self.concatenated_forward(
                        self.ref_model, chosen_ids, c_mask, reject_ids, r_mask
                    )
                loss, chosen_reward, reject_reward = self.loss_fn(
                    chosen_logps, rejected_logps, reference_chosen_logps, reference_rejected_logps
                )
                self.optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_norm)
                self.optimizer.step()

                acc_mean = (chosen_reward > reject_reward).float().mean().item()
                loss_mean = loss_mean * 0.9 + 0.1 * loss.item()
            print(f"epoch {epoch}: loss_mean {loss_mean:.4f} acc {acc_mean:.2f}")


def make_preference_batches(n_batches=6, batch_size=8):
    batches = []
    for _ in range(n_batches):
        prompt = torch.randint(1, VOCAB, (batch_size, PROMPT_LEN))
        chosen = torch.cat([prompt, torch.randint(1, VOCAB // 2, (batch_size, RESP_LEN))], dim=1)
        rejected = torch.cat([prompt, torch.randint(VOCAB // 2, VOCAB, (batch_size, RESP_LEN))], dim=1)
        mask = torch.cat([torch.zeros(batch_size, PROMPT_LEN), torch.ones(batch_size, RESP_LEN)], dim=1)
        batches.append((chosen, mask, rejected, mask.clone()))
    return batches


def main():
    sft_model = TinyCausalLM()
    model = copy.deepcopy(sft_model)
    ref_model = copy.deepcopy(sft_model)
    for p in ref_model.parameters():
        p.requires_grad_(False)

    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    trainer = DPOTrainer(model, ref_model, optimizer, beta=0.1)
    trainer.fit(make_preference_batches())


if __name__ == "__main__":
    main()
