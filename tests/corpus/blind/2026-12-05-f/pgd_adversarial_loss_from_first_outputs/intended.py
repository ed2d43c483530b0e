"""Reduced from https://github.com/xiangking/ark-nlp/issues/46

The author was fine-tuning a text classifier with ark-nlp's Task class and added PGD adversarial
training to the task's _on_backward hook (the usual recipe: backward the clean loss, back up the
gradients, then K times perturb the word embeddings along their gradient, recompute the loss and
backward it, restoring the clean gradients before the last adversarial backward). It raised
"Trying to backward through the graph a second time" at the adversarial loss's backward.
(A follow-up, https://github.com/xiangking/ark-nlp/issues/50, made it run with
retain_graph=True everywhere and found PGD scored below FGM.)

Here the same Task / PGD structure, a small embedding + BiGRU classifier, and synthetic token ids.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB, EMB, HIDDEN, N_CLASSES, SEQ = 200, 32, 32, 3, 16


class PGD(object):
    def __init__(self, module):
        self.module = module
        self.emb_backup = {}
        self.grad_backup = {}

    def attack(self, epsilon=1.0, alpha=0.3, emb_name="emb.", is_first_attack=False):
        for name, param in self.module.named_parameters():
            if param.requires_grad and emb_name in name:
                if is_first_attack:
                    self.emb_backup[name] = param.data.clone()
                norm = torch.norm(param.grad)
                if norm != 0 and not torch.isnan(norm):
                    r_at = alpha * param.grad / norm
                    param.data.add_(r_at)
                    param.data = self.project(name, param.data, epsilon)

    def restore(self, emb_name="emb."):
        for name, param in self.module.named_parameters():
            if param.requires_grad and emb_name in name:
                assert name in self.emb_backup
                param.data = self.emb_backup[name]
        self.emb_backup = {}

    def project(self, param_name, param_data, epsilon):
        r = param_data - self.emb_backup[param_name]
        if torch.norm(r) > epsilon:
            r = epsilon * r / torch.norm(r)
        return self.emb_backup[param_name] + r

    def backup_grad(self):
        for name, param in self.module.named_parameters():
            if param.requires_grad and param.grad is not None:
                self.grad_backup[name] = param.grad.clone()

    def restore_grad(self):
        for name, param in self.module.named_parameters():
            if param.requires_grad and param.grad is not None:
                param.grad = self.grad_backup[name]


class GRUClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, EMB, padding_idx=0)
        self.gru = nn.GRU(EMB, HIDDEN, batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Linear(2 * HIDDEN, N_CLASSES)

    def forward(self, input_ids, attention_mask, **kwargs):
        h, _ = self.gru(self.emb(input_ids))
        mask = attention_mask.unsqueeze(-1).float()
        pooled = (h * mask).sum(1) / mask.sum(1)
        return self.classifier(self.dropout(pooled))


class SequenceClassificationTask(object):
    def __init__(self, module, optimizer, loss_function, K=3):
        self.module = module
        self.optimizer = optimizer
        self.loss_function = loss_function
        self.pgd = PGD(self.module)
        self.K = K
        self.logs = {}

    def _get_train_loss(self, inputs, outputs, **kwargs):
        logits = outputs
        loss = self._compute_loss(inputs, logits, **kwargs)
        return logits, loss

    def _compute_loss(self, inputs, logits, **kwargs):
        return self.loss_function(logits, inputs["label_ids"])

    def _on_backward(self, inputs, outputs, logits, loss, gradient_accumulation_steps=1, **kwargs):
        if gradient_accumulation_steps > 1:
            loss = loss / gradient_accumulation_steps

        loss.backward()
        self.pgd.backup_grad()
        # adversarial training
        for t in range(self.K):
            self.pgd.attack(is_first_attack=(t == 0))  # perturb the embeddings; back up param.data at the first attack
            if t != self.K - 1:
                self.module.zero_grad()
            else:
                self.pgd.restore_grad()
            outputs = self.module(**inputs)
            logits, loss_adv = self._get_train_loss(inputs, outputs, **kwargs)
            if gradient_accumulation_steps > 1:
                loss_adv = loss_adv / gradient_accumulation_steps
            loss_adv.backward()
        self.pgd.restore()  # restore the embeddings

        self.logs["epoch_loss"] = self.logs.get("epoch_loss", 0.0) + loss.item()
        return loss

    def _on_optimize(self, grad_clip=1.0):
        torch.nn.utils.clip_grad_norm_(self.module.parameters(), grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad()

    def fit(self, train_data, epochs=2, batch_size=16):
        self.optimizer.zero_grad()
        for epoch in range(epochs):
            self.module.train()
            self.logs["epoch_loss"] = 0.0
            for step in range(0, len(train_data["input_ids"]), batch_size):
                inputs = {k: v[step:step + batch_size] for k, v in train_data.items()}
                outputs = self.module(**inputs)
                logits, loss = self._get_train_loss(inputs, outputs)
                loss = self._on_backward(inputs, outputs, logits, loss)
                self._on_optimize()
            print(f"epoch {epoch}: loss {self.logs['epoch_loss']:.4f}")


lengths = torch.randint(SEQ // 2, SEQ + 1, (64,))
attention_mask = (torch.arange(SEQ)[None, :] < lengths[:, None]).long()
input_ids = torch.randint(1, VOCAB, (64, SEQ)) * attention_mask
label_ids = torch.randint(0, N_CLASSES, (64,))
train_data = {"input_ids": input_ids, "attention_mask": attention_mask, "label_ids": label_ids}

module = GRUClassifier()
optimizer = torch.optim.AdamW(module.parameters(), lr=2e-3)
model = SequenceClassificationTask(module, optimizer, nn.CrossEntropyLoss())
model.fit(train_data, epochs=2, batch_size=16)
