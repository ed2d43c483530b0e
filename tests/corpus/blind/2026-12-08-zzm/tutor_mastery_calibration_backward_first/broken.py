"""Knowledge tracing for an online tutor: a calibration loss on the student's mastery
vector is backwarded first, then the next-answer predictor built on the same vector.

Source: PyTorch forum, "What's the purpose of retain_variables in Variable backward
function?" https://discuss.pytorch.org/t/whats-the-purpose-of-retain-variables-in-variable-backward-function/364

The asker computes ``y = x + 2``, calls ``y.backward(...)`` (once with
``retain_variables=True``, once with ``False``, the old name of ``retain_graph``),
then builds ``z = y * y`` on the same ``y`` and calls ``z.backward(...)``; both runs
print the same gradients and the asker wants to know what the flag is for. The flag
matters exactly when the second backward has to go back through the part of the
graph the first one already used: ``x + 2`` saves nothing, so the toy never shows it,
but any graph with saved tensors under ``y`` fails on the second backward with
"Trying to backward through the graph a second time" unless the first backward
keeps the graph. The asker's intent is the pattern itself: a first backward from an
intermediate result, then a second backward from something computed on top of it,
with both gradients accumulated.

Reduction: a tutor's knowledge-tracing model. ``encoder`` (an MLP over a student's
recent answer history, tanh activations) produces a mastery vector ``y``; on batches
that contain a placement test, a calibration loss ties mastery to the placement
scores and is backwarded first (the asker's ``y.backward``); then ``predictor``
turns mastery into the probability of answering the next item right and that loss
is backwarded (the asker's ``z.backward``). One Adam steps after both. The first
placement batch arrives after two ordinary steps, and its second backward walks the
encoder's freed graph.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

HPARAMS = {
    "history_len": 20,
    "n_skills": 8,
    "hidden": 40,
    "batch_size": 24,
    "n_batches": 3,
    "placement_batches": (2,),
    "epochs": 2,
    "calibration_weight": 0.5,
    "lr": 2e-3,
}


class KnowledgeEncoder(nn.Module):
    def __init__(self, history_len, hidden, n_skills):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * history_len, hidden), nn.Tanh(),
                                 nn.Linear(hidden, n_skills), nn.Tanh())

    def forward(self, history):
        return self.net(history)


class NextAnswerPredictor(nn.Module):
    def __init__(self, n_skills):
        super().__init__()
        self.skill_query = nn.Linear(n_skills, n_skills)
        self.out = nn.Linear(n_skills, 1)

    def forward(self, mastery, item_skills):
        return self.out(mastery * self.skill_query(item_skills)).squeeze(-1)


def make_sessions(hp):
    sessions = []
    for b in range(hp["n_batches"]):
        correct = torch.randint(0, 2, (hp["batch_size"], hp["history_len"])).float()
        skills = torch.rand(hp["batch_size"], hp["history_len"])
        item_skills = F.one_hot(torch.randint(0, hp["n_skills"], (hp["batch_size"],)),
                                hp["n_skills"]).float()
        next_correct = (correct[:, -5:].mean(1) > 0.5).float()
        placement = torch.rand(hp["batch_size"], hp["n_skills"]) * 2 - 1
        sessions.append({
            "history": torch.cat([correct, skills], dim=1),
            "item_skills": item_skills,
            "next_correct": next_correct,
            "placement": placement,
            "has_placement": b in hp["placement_batches"],
        })
    return sessions


class TutorTrainer:
    def __init__(self, hp):
        self.hp = hp
        self.encoder = KnowledgeEncoder(hp["history_len"], hp["hidden"], hp["n_skills"])
        self.predictor = NextAnswerPredictor(hp["n_skills"])
        self.optimizer = torch.optim.Adam(
            list(self.encoder.parameters()) + list(self.predictor.parameters()), lr=hp["lr"])

    def train_step(self, batch):
        self.optimizer.zero_grad()
        mastery = self.encoder(batch["history"])
        if batch["has_placement"]:
            mastery_loss = self.hp["calibration_weight"] * F.mse_loss(mastery, batch["placement"])
            mastery_loss.backward()
        logits = self.predictor(mastery, batch["item_skills"])
        correct_loss = F.binary_cross_entropy_with_logits(logits, batch["next_correct"])
        correct_loss.backward()
        self.optimizer.step()
        return correct_loss.item()

    def fit(self, sessions):
        for epoch in range(self.hp["epochs"]):
            losses = [self.train_step(batch) for batch in sessions]
            print(f"epoch {epoch} next-answer loss {sum(losses) / len(losses):.4f}")


def main():
    trainer = TutorTrainer(HPARAMS)
    trainer.fit(make_sessions(HPARAMS))


if __name__ == "__main__":
    main()
