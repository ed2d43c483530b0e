"""Hugging Face Trainer with an adversary: after a warm-up step, compute_loss trains a critic on the features
and steps it, then builds the model's loss on the critic's output computed before that step."""

import tempfile

import torch
from torch import nn
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
from transformers.trainer_callback import PrinterCallback, ProgressCallback


class AdversarialTrainer(Trainer):
    def __init__(self, *args, critic, **kwargs):
        super().__init__(*args, **kwargs)
        self.critic = critic
        self.critic_opt = torch.optim.SGD(critic.parameters(), lr=0.1)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        domain = inputs.pop("domain")
        outputs = model(**inputs, output_hidden_states=True)
        critic_out = self.critic(outputs.hidden_states[-1][:, 0])
        loss = outputs.loss
        if self.state.global_step >= 1:
            critic_loss = nn.functional.binary_cross_entropy_with_logits(critic_out, domain)
            self.critic_opt.zero_grad()
            critic_loss.backward(retain_graph=True)
            self.critic_opt.step()
            loss = loss - 0.1 * nn.functional.binary_cross_entropy_with_logits(critic_out, domain)
        return (loss, outputs) if return_outputs else loss


torch.manual_seed(0)
config = BertConfig(
    vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, num_labels=2
)
model = BertForSequenceClassification(config)
critic = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))
data = [
    {
        "input_ids": torch.randint(0, 64, (12,)),
        "attention_mask": torch.ones(12, dtype=torch.long),
        "labels": i % 2,
        "domain": torch.tensor([float(i % 3 == 0)]),
    }
    for i in range(16)
]
with tempfile.TemporaryDirectory() as out:
    args = TrainingArguments(
        output_dir=out,
        max_steps=3,
        per_device_train_batch_size=4,
        report_to="none",
        logging_strategy="no",
        save_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
        seed=0,
        remove_unused_columns=False,
    )
    trainer = AdversarialTrainer(model=model, args=args, train_dataset=data, critic=critic)
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    trainer.train()
print("trained")
