"""Hugging Face Trainer: a consistency term on the previous batch, whose forward is kept for the next step.

The forward for the next step's term runs before this step's optimizer step, and its backward after it.
With the Trainer's default optimizer (fused AdamW from torch 2.8) nothing raises; with
`python hf_trainer_stale.py adamw_torch` torch's in-place error does.
"""

import sys
import tempfile

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
from transformers.trainer_callback import PrinterCallback, ProgressCallback


class ConsistencyTrainer(Trainer):
    previous = None

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        outputs = model(**inputs)
        loss = outputs.loss
        if self.previous is not None:
            loss = loss + 0.1 * self.previous.pow(2).mean()
        self.previous = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]).logits
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
        learning_rate=1e-3,
        report_to="none",
        logging_strategy="no",
        save_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
        seed=0,
        **({"optim": sys.argv[1]} if len(sys.argv) > 1 else {}),
    )
    trainer = ConsistencyTrainer(model=model, args=args, train_dataset=data)
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    trainer.train()
print("optimizer:", type(trainer.optimizer.optimizer).__name__, trainer.optimizer.optimizer.defaults.get("fused"))
print("classifier:", round(model.classifier.weight.sum().item(), 5))
