"""Hugging Face Trainer on a model of the user's own: a BERT from a config, and a head whose forward writes in place."""

import tempfile

import torch
from torch import nn
from transformers import BertConfig, BertModel, Trainer, TrainingArguments
from transformers.trainer_callback import PrinterCallback, ProgressCallback


class Scorer(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.backbone = BertModel(config, add_pooling_layer=False)
        self.score = nn.Linear(config.hidden_size, 2)

    def forward(self, input_ids, attention_mask, labels=None):
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        pooled = torch.tanh(hidden[:, 0])
        pooled += 0.1
        logits = self.score(pooled)
        loss = nn.functional.cross_entropy(logits, labels)
        return {"loss": loss, "logits": logits}


torch.manual_seed(0)
config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
model = Scorer(config)
data = [
    {"input_ids": torch.randint(0, 64, (12,)), "attention_mask": torch.ones(12, dtype=torch.long), "labels": i % 2}
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
    )
    trainer = Trainer(model=model, args=args, train_dataset=data)
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    trainer.train()
print("trained")
