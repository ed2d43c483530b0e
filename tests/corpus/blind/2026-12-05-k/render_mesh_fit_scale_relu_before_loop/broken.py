"""Fitting a mesh to multi-view silhouettes with a soft differentiable renderer, plus a learnt per-axis scale.

Source: https://github.com/facebookresearch/pytorch3d/issues/644

The author adapts the "fit a mesh via rendering" tutorial: a source sphere is
deformed by per-vertex offsets (``deform_verts``) so that its soft silhouettes
match target silhouettes seen from several orthographic cameras, regularised by
an edge-length loss and Laplacian smoothing. On top of the tutorial, the author
wants to optimise a per-axis scale ``scale_xyz`` (kept non-negative through a
ReLU) that the renderer applies to the vertices. Both tensors are optimised by
SGD with momentum; each iteration renders two random views. The renderer here
is a small soft point-splatting silhouette renderer written in torch, and the
target is an ellipsoid.
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(3)

device = torch.device("cpu")


class Meshes:
    def __init__(self, verts, faces):
        self.verts = verts
        self.faces = faces

    def verts_packed(self):
        return self.verts

    def edges_packed(self):
        f = self.faces
        edges = torch.cat([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]], dim=0)
        edges, _ = edges.sort(dim=1)
        return torch.unique(edges, dim=0)

    def offset_verts(self, offsets):
        return Meshes(self.verts + offsets, self.faces)


def uv_sphere(n_lat=6, n_lon=10):
    verts = [[0.0, 1.0, 0.0]]
    for i in range(1, n_lat):
        theta = math.pi * i / n_lat
        for j in range(n_lon):
            phi = 2 * math.pi * j / n_lon
            verts.append([math.sin(theta) * math.cos(phi), math.cos(theta), math.sin(theta) * math.sin(phi)])
    verts.append([0.0, -1.0, 0.0])
    faces = []
    for j in range(n_lon):
        faces.append([0, 1 + j, 1 + (j + 1) % n_lon])
    for i in range(n_lat - 2):
        for j in range(n_lon):
            a, b = 1 + i * n_lon + j, 1 + i * n_lon + (j + 1) % n_lon
            faces += [[a, a + n_lon, b], [b, a + n_lon, b + n_lon]]
    last = len(verts) - 1
    for j in range(n_lon):
        faces.append([last, 1 + (n_lat - 2) * n_lon + (j + 1) % n_lon, 1 + (n_lat - 2) * n_lon + j])
    return Meshes(torch.tensor(verts, device=device), torch.tensor(faces, device=device))


def orthographic_cameras(num_views):
    rotations = []
    for azim in torch.linspace(0, 2 * math.pi, num_views + 1)[:-1].tolist():
        c, s = math.cos(azim), math.sin(azim)
        rotations.append(torch.tensor([[c, 0.0, -s], [0.0, 1.0, 0.0], [s, 0.0, c]], device=device))
    return rotations


class SoftSilhouetteRenderer(nn.Module):
    def __init__(self, image_size=24, sigma=4e-3):
        super().__init__()
        ticks = torch.linspace(-1.5, 1.5, image_size)
        gy, gx = torch.meshgrid(ticks, ticks, indexing="ij")
        self.register_buffer("pixels", torch.stack([gx, gy], dim=-1).reshape(-1, 2))
        self.image_size = image_size
        self.sigma = sigma

    def forward(self, meshes, cameras, scale_xyz):
        verts = meshes.verts_packed() * scale_xyz
        xy = (verts @ cameras.T)[:, :2]
        d2 = ((self.pixels[:, None, :] - xy[None, :, :]) ** 2).sum(-1)
        coverage = 1.0 - torch.prod(1.0 - torch.exp(-d2 / self.sigma) * 0.9, dim=1)
        return coverage.reshape(self.image_size, self.image_size)


def mesh_edge_loss(meshes, target_length=0.0):
    v = meshes.verts_packed()
    e = meshes.edges_packed()
    return (((v[e[:, 0]] - v[e[:, 1]]).norm(dim=1) - target_length) ** 2).mean()


def mesh_laplacian_smoothing(meshes):
    v = meshes.verts_packed()
    e = meshes.edges_packed()
    n = v.shape[0]
    idx = torch.cat([e, e.flip(1)], dim=0)
    neighbour_sum = torch.zeros_like(v).index_add(0, idx[:, 0], v[idx[:, 1]])
    degree = torch.zeros(n, device=device).index_add(0, idx[:, 0], torch.ones(idx.shape[0], device=device))
    return ((neighbour_sum / degree[:, None] - v).norm(dim=1)).mean()


def update_mesh_shape_prior_losses(mesh, loss):
    loss["edge"] = mesh_edge_loss(mesh)
    loss["laplacian"] = mesh_laplacian_smoothing(mesh)


num_views = 6
num_views_per_iteration = 2
Niter = 20

src_mesh = uv_sphere()
target_cameras = orthographic_cameras(num_views)
renderer_silhouette = SoftSilhouetteRenderer()
with torch.no_grad():
    true_scale = torch.tensor([[1.3, 0.8, 1.0]], device=device)
    target_silhouette = [renderer_silhouette(src_mesh, R, true_scale) for R in target_cameras]

losses = {
    "silhouette": {"weight": 1.0, "values": []},
    "edge": {"weight": 1.0, "values": []},
    "laplacian": {"weight": 1.0, "values": []},
}

verts_shape = src_mesh.verts_packed().shape
deform_verts = torch.full(verts_shape, 0.0, device=device, requires_grad=True)

scale_xyz = torch.tensor([[1.0, 1.0, 1.0]], device=device, requires_grad=True)
scale_xyz_ = torch.nn.functional.relu(scale_xyz)

optimizer = torch.optim.SGD([deform_verts, scale_xyz], lr=0.5, momentum=0.9)

for i in range(Niter):
    optimizer.zero_grad()

    new_src_mesh = src_mesh.offset_verts(deform_verts)

    loss = {k: torch.tensor(0.0, device=device) for k in losses}
    update_mesh_shape_prior_losses(new_src_mesh, loss)

    for j in torch.randperm(num_views).tolist()[:num_views_per_iteration]:
        images_predicted = renderer_silhouette(new_src_mesh, cameras=target_cameras[j], scale_xyz=scale_xyz_)
        loss_silhouette = ((images_predicted - target_silhouette[j]) ** 2).mean()
        loss["silhouette"] += loss_silhouette / num_views_per_iteration

    sum_loss = torch.tensor(0.0, device=device)
    for k, term in loss.items():
        sum_loss += term * losses[k]["weight"]
        losses[k]["values"].append(float(term.detach().cpu()))

    print(f"iter {i}: total_loss = {sum_loss.item():.6f}")

    sum_loss.backward()
    optimizer.step()
