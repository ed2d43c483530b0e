"""Camera pose refinement while fitting a point-splatting scene (pose estimation from noisy COLMAP poses).

Source: https://github.com/zsh523/3rgs/issues/5
The author adds a pose-adjustment network to a Gaussian-splatting training script (reduced here:
isotropic 2-D splats of 48 points rendered into 16x16 images, two training views whose COLMAP
poses are perturbed). ``scene.pose_adjust`` holds a learnable per-camera correction (a translation
and a 6-D rotation, zero-initialised) applied to the camera-to-world matrix of the view being
trained; the point cloud and the pose corrections each have their own Adam, stepped after the
photometric L1 loss of the view, in the usual "pop a random camera from the stack" loop.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

IMAGE_SIZE = 16


def getProjectionMatrix(znear, zfar, fovX, fovY):
    tanHalfFovY = math.tan(fovY / 2)
    tanHalfFovX = math.tan(fovX / 2)
    top, bottom = tanHalfFovY * znear, -tanHalfFovY * znear
    right, left = tanHalfFovX * znear, -tanHalfFovX * znear
    P = torch.zeros(4, 4)
    P[0, 0] = 2.0 * znear / (right - left)
    P[1, 1] = 2.0 * znear / (top - bottom)
    P[0, 2] = (right + left) / (right - left)
    P[1, 2] = (top + bottom) / (top - bottom)
    P[3, 2] = 1.0
    P[2, 2] = zfar / (zfar - znear)
    P[2, 3] = -(zfar * znear) / (zfar - znear)
    return P


def look_at_w2c(eye, target=(0.0, 0.0, 0.0)):
    eye = torch.tensor(eye)
    forward = torch.tensor(target) - eye
    forward = forward / forward.norm()
    right = torch.linalg.cross(forward, torch.tensor([0.0, 1.0, 0.0]))
    right = right / right.norm()
    up = torch.linalg.cross(right, forward)
    R = torch.stack([right, up, forward])
    w2c = torch.eye(4)
    w2c[:3, :3] = R
    w2c[:3, 3] = -R @ eye
    return w2c


def rotation_6d_to_matrix(d6):
    a1, a2 = d6[..., :3], d6[..., 3:]
    b1 = F.normalize(a1, dim=-1)
    b2 = a2 - (b1 * a2).sum(-1, keepdim=True) * b1
    b2 = F.normalize(b2, dim=-1)
    b3 = torch.cross(b1, b2, dim=-1)
    return torch.stack((b1, b2, b3), dim=-2)


class Camera:
    def __init__(self, colmap_id, w2c, image, znear=0.1, zfar=100.0, fov=1.0):
        self.colmap_id = colmap_id
        self.original_image = image
        self.world_view_transform = w2c.transpose(0, 1)
        self.projection_matrix = getProjectionMatrix(znear, zfar, fov, fov).transpose(0, 1)
        self.full_proj_transform = (
            self.world_view_transform.unsqueeze(0).bmm(self.projection_matrix.unsqueeze(0))
        ).squeeze(0)
        self.camera_center = self.world_view_transform.inverse()[3, :3]


class MiniCam:
    def __init__(self, world_view_transform, full_proj_transform, camera_center):
        self.world_view_transform = world_view_transform
        self.full_proj_transform = full_proj_transform
        self.camera_center = camera_center


class GaussianModel:
    def __init__(self, xyz, colors):
        self.splats = nn.ParameterDict({"xyz": nn.Parameter(xyz.clone()), "f_dc": nn.Parameter(colors.clone())})
        self._scale = 0.12
        self.optimizer = None

    @property
    def _xyz(self):
        return self.splats["xyz"]

    @property
    def _features(self):
        return self.splats["f_dc"]

    def training_setup(self, lr_xyz=1e-2, lr_features=5e-2):
        self.optimizer = torch.optim.Adam(
            [
                {"params": [self.splats["xyz"]], "lr": lr_xyz, "name": "xyz"},
                {"params": [self.splats["f_dc"]], "lr": lr_features, "name": "f_dc"},
            ],
            lr=0.0,
            eps=1e-15,
        )


class CameraOptModule(nn.Module):
    """Per-camera pose correction: translation + 6-D rotation delta, applied to camera-to-world."""

    def __init__(self, n):
        super().__init__()
        self.embeds = nn.Embedding(n, 9)
        self.register_buffer("identity", torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]))
        nn.init.zeros_(self.embeds.weight)

    def forward(self, camtoworlds, embed_ids):
        batch_dims = camtoworlds.shape[:-2]
        pose_deltas = self.embeds(embed_ids)
        dx, drot = pose_deltas[..., :3], pose_deltas[..., 3:]
        rot = rotation_6d_to_matrix(drot + self.identity.expand(*batch_dims, -1))
        transform = torch.eye(4).repeat((*batch_dims, 1, 1))
        transform[..., :3, :3] = rot
        transform[..., 3, :3] = dx
        return torch.matmul(camtoworlds, transform)


class Scene:
    def __init__(self, gaussians, cameras):
        self.gaussians = gaussians
        self.train_cameras = cameras
        self.pose_adjust = CameraOptModule(len(cameras))
        self.pose_optimizer = torch.optim.Adam(self.pose_adjust.parameters(), lr=1e-3)

    def getTrainCameras(self):
        return self.train_cameras


def render(viewpoint_camera, pc, bg_color):
    xyz_h = torch.cat([pc._xyz, torch.ones_like(pc._xyz[:, :1])], dim=1)
    p_hom = xyz_h @ viewpoint_camera.full_proj_transform
    p_proj = p_hom[:, :2] / (p_hom[:, 3:4] + 1e-7)
    pix = torch.linspace(-1.0, 1.0, IMAGE_SIZE)
    gy, gx = torch.meshgrid(pix, pix, indexing="ij")
    d2 = (gx[None] - p_proj[:, 0, None, None]) ** 2 + (gy[None] - p_proj[:, 1, None, None]) ** 2
    weights = torch.exp(-0.5 * d2 / pc._scale ** 2)  # N, H, W
    alpha = 1.0 - torch.exp(-weights.sum(0))
    color = torch.einsum("nhw,nc->chw", weights, torch.sigmoid(pc._features)) / (weights.sum(0) + 1e-6)
    image = alpha * color + (1.0 - alpha) * bg_color[:, None, None]
    return {"render": image, "viewspace_points": p_proj}


def l1_loss(network_output, gt):
    return torch.abs((network_output - gt)).mean()


def make_scene():
    true_xyz = torch.randn(48, 3) * 0.6
    true_colors = torch.randn(48, 3)
    true_pc = GaussianModel(true_xyz, true_colors)
    bg = torch.zeros(3)
    cameras = []
    for colmap_id, eye in enumerate([(0.0, 0.3, -4.0), (2.5, 0.5, -3.0)], start=1):
        true_w2c = look_at_w2c(eye)
        with torch.no_grad():
            gt_image = render(Camera(colmap_id, true_w2c, None), true_pc, bg)["render"]
        noisy_eye = tuple(e + 0.1 * torch.randn(1).item() for e in eye)
        cameras.append(Camera(colmap_id, look_at_w2c(noisy_eye), gt_image))
    init_xyz = true_xyz + 0.1 * torch.randn_like(true_xyz)
    gaussians = GaussianModel(init_xyz, torch.zeros(48, 3))
    return Scene(gaussians, cameras), bg


def training(iterations=30, pose_opt=True):
    scene, background = make_scene()
    gaussians = scene.gaussians
    gaussians.training_setup()
    viewpoint_stack = None
    for iteration in range(1, iterations + 1):
        if not viewpoint_stack:
            viewpoint_stack = scene.getTrainCameras().copy()
        viewpoint_cam = viewpoint_stack.pop(torch.randint(0, len(viewpoint_stack), (1,)).item())

        if pose_opt:
            c2w = viewpoint_cam.world_view_transform.inverse().unsqueeze(0)
            adjusted_c2w = scene.pose_adjust(c2w, torch.tensor([viewpoint_cam.colmap_id - 1])).squeeze(0)
            viewpoint_cam.world_view_transform = adjusted_c2w.inverse()
            viewpoint_cam.camera_center = adjusted_c2w.inverse()[3, :3]
            viewpoint_cam.full_proj_transform = (
                adjusted_c2w.inverse().unsqueeze(0).bmm(viewpoint_cam.projection_matrix.unsqueeze(0))
            ).squeeze(0)

        render_pkg = render(viewpoint_cam, gaussians, background)
        image = render_pkg["render"]
        gt_image = viewpoint_cam.original_image
        Ll1 = l1_loss(image, gt_image)
        loss = Ll1
        loss.backward()

        with torch.no_grad():
            if iteration % 5 == 0:
                print(f"[ITER {iteration}] L1 {Ll1.item():.5f}")
            gaussians.optimizer.step()
            gaussians.optimizer.zero_grad(set_to_none=True)
            if pose_opt:
                scene.pose_optimizer.step()
                scene.pose_optimizer.zero_grad(set_to_none=True)


if __name__ == "__main__":
    training()
