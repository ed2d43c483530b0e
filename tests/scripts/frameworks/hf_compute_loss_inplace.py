"""Hugging Face Trainer with a custom compute_loss that clamps softmax's output in place."""

import tempfile

import torch
from torch import nn
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
from transformers.trainer_callback import PrinterCallback, ProgressCallback


class SmoothedTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        probs = outputs.logits.softmax(-1)
        probs.clamp_(min=1e-4)
        loss = nn.functional.nll_loss(probs.log(), labels)
        return (loss, outputs) if return_outputs else loss


torch.manual_seed(0)
config = BertConfig(
    vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, num_labels=2
)
model = BertForSequenceClassification(config)
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
    trainer = SmoothedTrainer(model=model, args=args, train_dataset=data)
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    trainer.train()
print("trained")
