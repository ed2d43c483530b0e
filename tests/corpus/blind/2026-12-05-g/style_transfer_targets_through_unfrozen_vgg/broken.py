"""Reduced from https://github.com/gordicaleksa/pytorch-neural-style-transfer/issues/8

The author had re-written the repository's Gatys-style neural style transfer (a VGG feature
extractor returning several layers' activations; the content target and the style targets' Gram
matrices computed once before the optimization; Adam on the pixels of the optimizing image, which
starts as the content image; content, style and total-variation losses). Their version "gave error
during training, about the graph being freed and calling backward a second time" and only ran with
`retain_graph=True`; they asked why the repository's `total_loss.backward()` does not need it. The
difference is the feature extractor: the repository builds its VGG with `requires_grad=False` on
every parameter, so the targets computed before the loop carry no graph; with the VGG's parameters
left trainable, each target is a graph through them, and the first backward frees it.

Here: the same program with a small randomly initialised VGG-style extractor (no download) and
synthetic 32x32 content and style images, seeded, on CPU. The VGG's parameters are left trainable,
as in the author's version.
"""
import torch
import torch.nn as nn
from torch.optim import Adam

torch.manual_seed(0)

CONFIG = {
    'content_weight': 1e5,
    'style_weight': 3e4,
    'tv_weight': 1e0,
    'iterations': 20,
}


class Vgg16(nn.Module):
    """Feature maps after relu1_2, relu2_2, relu3_3 and relu4_3 (a scaled-down VGG16 layout)."""

    def __init__(self):
        super().__init__()
        self.layer_names = ['relu1_2', 'relu2_2', 'relu3_3', 'relu4_3']
        self.content_feature_maps_index = 1
        self.style_feature_maps_indices = list(range(len(self.layer_names)))
        self.slice1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.slice2 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
                                    nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
        self.slice3 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                                    nn.Conv2d(32, 32, 3, padding=1), nn.ReLU())
        self.slice4 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                                    nn.Conv2d(32, 32, 3, padding=1), nn.ReLU())

    def forward(self, x):
        x = self.slice1(x)
        relu1_2 = x
        x = self.slice2(x)
        relu2_2 = x
        x = self.slice3(x)
        relu3_3 = x
        x = self.slice4(x)
        relu4_3 = x
        return [relu1_2, relu2_2, relu3_3, relu4_3]


def prepare_model():
    model = Vgg16()
    return model.eval(), model.content_feature_maps_index, model.style_feature_maps_indices


def gram_matrix(x, should_normalize=True):
    (b, ch, h, w) = x.size()
    features = x.view(b, ch, w * h)
    features_t = features.transpose(1, 2)
    gram = features.bmm(features_t)
    if should_normalize:
        gram /= ch * h * w
    return gram


def total_variation(y):
    return torch.sum(torch.abs(y[:, :, :, :-1] - y[:, :, :, 1:])) + \
        torch.sum(torch.abs(y[:, :, :-1, :] - y[:, :, 1:, :]))


def build_loss(neural_net, optimizing_img, target_representations, content_feature_maps_index,
               style_feature_maps_indices, config):
    target_content_representation = target_representations[0]
    target_style_representation = target_representations[1]

    current_set_of_feature_maps = neural_net(optimizing_img)

    current_content_representation = current_set_of_feature_maps[content_feature_maps_index].squeeze(axis=0)
    content_loss = torch.nn.MSELoss(reduction='mean')(target_content_representation, current_content_representation)

    style_loss = 0.0
    current_style_representation = [gram_matrix(x) for cnt, x in enumerate(current_set_of_feature_maps)
                                    if cnt in style_feature_maps_indices]
    for gram_gt, gram_hat in zip(target_style_representation, current_style_representation):
        style_loss += torch.nn.MSELoss(reduction='sum')(gram_gt[0], gram_hat[0])
    style_loss /= len(target_style_representation)

    tv_loss = total_variation(optimizing_img)

    total_loss = config['content_weight'] * content_loss + config['style_weight'] * style_loss \
        + config['tv_weight'] * tv_loss
    return total_loss, content_loss, style_loss, tv_loss


def make_tuning_step(neural_net, optimizer, target_representations, content_feature_maps_index,
                     style_feature_maps_indices, config):
    def tuning_step(optimizing_img):
        total_loss, content_loss, style_loss, tv_loss = build_loss(
            neural_net, optimizing_img, target_representations, content_feature_maps_index,
            style_feature_maps_indices, config)
        total_loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return total_loss, content_loss, style_loss, tv_loss

    return tuning_step


def neural_style_transfer(config):
    content_img = torch.rand(1, 3, 32, 32)
    style_img = torch.rand(1, 3, 32, 32)

    init_img = content_img
    optimizing_img = init_img.clone().requires_grad_(True)

    neural_net, content_feature_maps_index, style_feature_maps_indices = prepare_model()

    content_img_set_of_feature_maps = neural_net(content_img)
    style_img_set_of_feature_maps = neural_net(style_img)

    target_content_representation = content_img_set_of_feature_maps[content_feature_maps_index].squeeze(axis=0)
    target_style_representation = [gram_matrix(x) for cnt, x in enumerate(style_img_set_of_feature_maps)
                                   if cnt in style_feature_maps_indices]
    target_representations = [target_content_representation, target_style_representation]

    optimizer = Adam((optimizing_img,), lr=1e-1)
    tuning_step = make_tuning_step(neural_net, optimizer, target_representations, content_feature_maps_index,
                                   style_feature_maps_indices, config)
    for cnt in range(config['iterations']):
        total_loss, content_loss, style_loss, tv_loss = tuning_step(optimizing_img)
        with torch.no_grad():
            print(f'Adam | iteration: {cnt:03}, total loss={total_loss.item():12.4f}, '
                  f'content_loss={config["content_weight"] * content_loss.item():12.4f}, '
                  f'style loss={config["style_weight"] * style_loss.item():12.4f}, '
                  f'tv loss={config["tv_weight"] * tv_loss.item():12.4f}')
    return optimizing_img


if __name__ == '__main__':
    neural_style_transfer(CONFIG)
