"""gradlab's Hugging Face callback: on a correct run, on a model whose head is fed detached features, on the
stale consistency term with the default fused AdamW (tracked for every step).

Prints one line per case: what the callback reported at step 1, gradlab's warnings, whether it still tracks.
"""

import tempfile
import warnings

import torch
from torch import nn
from transformers import BertConfig, BertModel, Trainer, TrainingArguments
from transformers.trainer_callback import PrinterCallback, ProgressCallback

from gradlab.integrations.huggingface import TrackCallback


class Scorer(nn.Module):
    def __init__(self, config: BertConfig, cut: bool) -> None:
        super().__init__()
        self.backbone = BertModel(config, add_pooling_layer=False)
        self.score = nn.Linear(config.hidden_size, 2)
        self.cut = cut
        self.previous = None

    def forward(self, input_ids, attention_mask, labels=None):
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state[:, 0]
        logits = self.score(hidden.detach() if self.cut else hidden)
        loss = nn.functional.cross_entropy(logits, labels)
        return {"loss": loss, "logits": logits}


class ConsistencyTrainer(Trainer):
    previous = None

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        outputs = model(**inputs)
        loss = outputs["loss"]
        if self.previous is not None:
            loss = loss + 0.1 * self.previous.pow(2).mean()
        self.previous = model(**inputs)["logits"]
        return (loss, outputs) if return_outputs else loss


def train(trainer_class: type[Trainer], cut: bool, callback: TrackCallback) -> None:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
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
        trainer = trainer_class(model=Scorer(config, cut), args=args, train_dataset=data, callbacks=[callback])
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
        trainer.train()


for case, trainer_class, cut, steps in (
    ("correct", Trainer, False, 2),
    ("cut", Trainer, True, 2),
    ("stale", ConsistencyTrainer, False, None),
):
    callback = TrackCallback(steps=steps)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        train(trainer_class, cut, callback)
    ours = [w for w in seen if "gradlab" in type(w.message).__module__]
    kinds = [m.kind for r in callback.reports for m in r.mismatches]
    print(f"{case}: reports {len(callback.reports)} ok {all(r.ok for r in callback.reports)} kinds {kinds}")
    print(f"{case}: warnings {[type(w.message).__name__ for w in ours]}")
    for w in ours:
        print(f"{case}: warning at {w.filename.rsplit('/', 1)[-1]}:{w.lineno}: {str(w.message).splitlines()[-1][:60]}")
    print(f"{case}: tracker active after train {callback.tracker.active}")
