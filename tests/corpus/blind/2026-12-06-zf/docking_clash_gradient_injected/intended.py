"""Protein-ligand docking: pocket and ligand encoders, a pose head, a pairwise distance head and an affinity head.

Source: https://github.com/ashawkey/stable-dreamfusion/pull/126
The report is stable-dreamfusion's score-distillation step: a gradient computed
outside autograd is pushed into the rendered latents with
`latents.backward(gradient=grad, retain_graph=True)`, and the ordinary losses on
the same forward are backpropagated afterwards. The pull request notes the two
backward calls (hence retain_graph on the first) and replaces them with one
backward through a SpecifyGradient autograd function that injects the gradient.
The training setting is the writer's: predicted ligand coordinates receive an
analytic steric-clash gradient (a non-differentiable physics score, computed under
no_grad) with `coords.backward(gradient=...)`, written without retain_graph, and the
distance and affinity losses are then backpropagated through the same encoders:
"Trying to backward through the graph a second time".
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_POCKET, N_LIG, ATOM_FEAT, HID = 24, 10, 8, 32


class AtomEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(ATOM_FEAT + 3, HID)
        self.mix = nn.Sequential(nn.Linear(2 * HID, HID), nn.SiLU(), nn.Linear(HID, HID))

    def forward(self, feats, coords):
        h = F.silu(self.embed(torch.cat([feats, coords], dim=-1)))
        d = torch.cdist(coords, coords)
        w = torch.softmax(-d, dim=-1)
        return h + self.mix(torch.cat([h, w @ h], dim=-1))


class DockingModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.pocket_enc = AtomEncoder()
        self.ligand_enc = AtomEncoder()
        self.cross = nn.MultiheadAttention(HID, 4, batch_first=True)
        self.pose_head = nn.Linear(HID, 3)
        self.dist_head = nn.Sequential(nn.Linear(2 * HID, HID), nn.SiLU(), nn.Linear(HID, 1))
        self.affinity_head = nn.Sequential(nn.Linear(HID, HID), nn.SiLU(), nn.Linear(HID, 1))

    def forward(self, p_feat, p_xyz, l_feat, l_xyz):
        hp = self.pocket_enc(p_feat, p_xyz)
        hl = self.ligand_enc(l_feat, l_xyz)
        hl = hl + self.cross(hl, hp, hp)[0]
        coords = l_xyz + self.pose_head(hl)
        pair = torch.cat([hl.unsqueeze(2).expand(-1, -1, N_POCKET, -1), hp.unsqueeze(1).expand(-1, N_LIG, -1, -1)], dim=-1)
        dist = F.softplus(self.dist_head(pair)).squeeze(-1)
        affinity = self.affinity_head(hl.mean(1)).squeeze(-1)
        return coords, dist, affinity


class SpecifyGradient(torch.autograd.Function):
    """Identity-like node whose backward hands a given gradient to its input."""

    @staticmethod
    def forward(ctx, input_tensor, gt_grad):
        ctx.save_for_backward(gt_grad)
        return torch.ones([1], device=input_tensor.device, dtype=input_tensor.dtype)

    @staticmethod
    def backward(ctx, grad_scale):
        (gt_grad,) = ctx.saved_tensors
        return gt_grad * grad_scale, None


@torch.no_grad()
def clash_gradient(lig_xyz, pocket_xyz, radius=1.5):
    """Gradient of a soft steric-clash penalty sum(relu(r - d)^2), as a docking score program returns it."""
    diff = lig_xyz.unsqueeze(2) - pocket_xyz.unsqueeze(1)
    d = diff.norm(dim=-1, keepdim=True).clamp_min(1e-6)
    overlap = F.relu(radius - d)
    return (-2 * overlap * diff / d).sum(2)


model = DockingModel()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
clash_weight = 0.1

# synthetic complexes: pocket atoms, crystal ligand pose, a perturbed starting pose, affinities
pocket_feat = torch.randn(16, N_POCKET, ATOM_FEAT)
pocket_xyz = torch.randn(16, N_POCKET, 3) * 3
ligand_feat = torch.randn(16, N_LIG, ATOM_FEAT)
true_xyz = torch.randn(16, N_LIG, 3)
start_xyz = true_xyz + 0.5 * torch.randn(16, N_LIG, 3)
true_affinity = torch.randn(16)

for epoch in range(3):
    for i in range(0, 16, 8):
        sl = slice(i, i + 8)
        coords, dist, affinity = model(pocket_feat[sl], pocket_xyz[sl], ligand_feat[sl], start_xyz[sl])
        true_dist = torch.cdist(true_xyz[sl], pocket_xyz[sl])
        optimizer.zero_grad()
        # physics score: push the predicted pose out of clashes with the pocket
        grad = clash_weight * clash_gradient(coords.detach(), pocket_xyz[sl])
        pose_loss = F.mse_loss(coords, true_xyz[sl])
        dist_loss = F.l1_loss(dist, true_dist)
        affinity_loss = F.mse_loss(affinity, true_affinity[sl])
        loss = pose_loss + dist_loss + affinity_loss
        (SpecifyGradient.apply(coords, grad).sum() + loss).backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
