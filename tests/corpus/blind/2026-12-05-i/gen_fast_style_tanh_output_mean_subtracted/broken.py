"""Fast neural style: a feed-forward image transformation network trained with a perceptual loss.

Source: https://github.com/abhiskk/fast-neural-style/issues/12

The author trains the repository's ``TransformerNet`` (strided convolutions, instance norm, residual
blocks, upsampling convolutions) against a fixed VGG-16 loss network, with content and style (Gram
matrix) losses and one Adam, exactly as ``neural_style.py train`` does, except that they added an
``nn.Tanh()`` as the transformer's last layer. The repository's ``utils`` helpers convert batches to
BGR and subtract the ImageNet mean before the loss network sees them.
"""

import torch
import torch.nn as nn
from torch.optim import Adam

torch.manual_seed(42)


# ---- utils.py ----------------------------------------------------------------------------------
def gram_matrix(y):
    b, ch, h, w = y.size()
    features = y.view(b, ch, w * h)
    return features.bmm(features.transpose(1, 2)) / (ch * h * w)


def preprocess_batch(batch):
    batch = batch.transpose(0, 1)
    (r, g, b) = torch.chunk(batch, 3)
    batch = torch.cat((b, g, r))
    return batch.transpose(0, 1)


def subtract_imagenet_mean_batch(batch):
    """Subtract ImageNet mean pixel-wise from a BGR image."""
    mean = torch.zeros_like(batch)
    mean[:, 0, :, :] = 103.939
    mean[:, 1, :, :] = 116.779
    mean[:, 2, :, :] = 123.680
    batch -= mean


# ---- transformer_net.py ------------------------------------------------------------------------
class ConvLayer(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super().__init__()
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        return self.conv2d(self.reflection_pad(x))


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = nn.InstanceNorm2d(channels, affine=True)
        self.relu = nn.ReLU()

    def forward(self, x):
        residual = x
        out = self.relu(self.in1(self.conv1(x)))
        out = self.in2(self.conv2(out))
        return out + residual


class UpsampleConvLayer(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super().__init__()
        self.upsample = upsample
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        if self.upsample:
            x = nn.functional.interpolate(x, scale_factor=self.upsample, mode="nearest")
        return self.conv2d(self.reflection_pad(x))


class TransformerNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = ConvLayer(3, 8, kernel_size=9, stride=1)
        self.in1 = nn.InstanceNorm2d(8, affine=True)
        self.conv2 = ConvLayer(8, 16, kernel_size=3, stride=2)
        self.in2 = nn.InstanceNorm2d(16, affine=True)
        self.res1 = ResidualBlock(16)
        self.res2 = ResidualBlock(16)
        self.deconv1 = UpsampleConvLayer(16, 8, kernel_size=3, stride=1, upsample=2)
        self.in4 = nn.InstanceNorm2d(8, affine=True)
        self.deconv3 = UpsampleConvLayer(8, 3, kernel_size=9, stride=1)
        self.relu = nn.ReLU()
        self.tanh = nn.Tanh()

    def forward(self, X):
        y = self.relu(self.in1(self.conv1(X)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.res2(self.res1(y))
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.deconv3(y)
        return self.tanh(y)


# ---- vgg16.py (the loss network, reduced; its weights are never optimized) ---------------------
class Vgg16(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1_1 = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.conv1_2 = nn.Conv2d(8, 8, kernel_size=3, padding=1)
        self.conv2_1 = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.conv2_2 = nn.Conv2d(16, 16, kernel_size=3, padding=1)
        self.conv3_1 = nn.Conv2d(16, 16, kernel_size=3, padding=1)

    def forward(self, X):
        h = torch.relu(self.conv1_1(X))
        relu1_2 = torch.relu(self.conv1_2(h))
        h = nn.functional.max_pool2d(relu1_2, kernel_size=2, stride=2)
        h = torch.relu(self.conv2_1(h))
        relu2_2 = torch.relu(self.conv2_2(h))
        h = nn.functional.max_pool2d(relu2_2, kernel_size=2, stride=2)
        relu3_3 = torch.relu(self.conv3_1(h))
        return [relu1_2, relu2_2, relu3_3]


# ---- neural_style.py train ---------------------------------------------------------------------
def train(args):
    torch.manual_seed(args["seed"])
    images = torch.rand(16, 3, args["image_size"], args["image_size"]) * 255
    train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images), batch_size=args["batch_size"])

    transformer = TransformerNet()
    optimizer = Adam(transformer.parameters(), args["lr"])
    mse_loss = torch.nn.MSELoss()
    vgg = Vgg16()

    style = torch.rand(1, 3, args["image_size"], args["image_size"]) * 255
    style = style.repeat(args["batch_size"], 1, 1, 1)
    style = preprocess_batch(style)
    with torch.no_grad():
        style_v = style.clone()
        subtract_imagenet_mean_batch(style_v)
        features_style = vgg(style_v)
        gram_style = [gram_matrix(y) for y in features_style]

    for e in range(args["epochs"]):
        transformer.train()
        agg_content_loss = agg_style_loss = 0.0
        for batch_id, (x,) in enumerate(train_loader):
            n_batch = len(x)
            optimizer.zero_grad()
            x = preprocess_batch(x)
            y = transformer(x)
            xc = x.clone()

            subtract_imagenet_mean_batch(y)
            subtract_imagenet_mean_batch(xc)

            features_y = vgg(y)
            with torch.no_grad():
                features_xc = vgg(xc)
            f_xc_c = features_xc[1].detach()
            content_loss = args["content_weight"] * mse_loss(features_y[1], f_xc_c)

            style_loss = 0.0
            for m in range(len(features_y)):
                gram_s = gram_style[m].detach()
                gram_y = gram_matrix(features_y[m])
                style_loss += args["style_weight"] * mse_loss(gram_y, gram_s[:n_batch, :, :])

            total_loss = content_loss + style_loss
            total_loss.backward()
            optimizer.step()

            agg_content_loss += content_loss.item()
            agg_style_loss += style_loss.item()
            print(f"epoch {e + 1} batch {batch_id + 1}: content {agg_content_loss:.4f} style {agg_style_loss:.4f}")


if __name__ == "__main__":
    train({"seed": 42, "image_size": 16, "batch_size": 4, "lr": 1e-3, "epochs": 2,
           "content_weight": 1.0, "style_weight": 5.0})
