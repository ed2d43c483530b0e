"""Hugging Face Trainer done right: a tiny BERT from a config, the default optimizer, a compute_loss of one's own."""

import tempfile

import torch
from torch import nn
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
from transformers.trainer_callback import PrinterCallback, ProgressCallback


class SmoothedTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        log_probs = outputs.logits.log_softmax(-1)
        loss = nn.functional.nll_loss(log_probs, labels) - 0.01 * log_probs.mean()
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
        max_steps=4,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=2,
        learning_rate=1e-3,
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
print("optimizer:", type(trainer.optimizer.optimizer).__name__, trainer.optimizer.optimizer.defaults.get("fused"))
print("classifier:", round(model.classifier.weight.sum().item(), 5))
