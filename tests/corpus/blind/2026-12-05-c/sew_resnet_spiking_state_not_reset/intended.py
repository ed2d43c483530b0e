"""A spiking SEW-ResNet (SpikingJelly multi-step IF neurons) trained in a YOLO-style fit_one_epoch.

Source: https://github.com/fangwei123456/Spike-Element-Wise-ResNet/issues/19
"RuntimeError: Trying to backward through the graph a second time".
The reporter used SEW-ResNet as the backbone of their own training code (``utils_fit.py``,
``fit_one_epoch``); the second ``loss.backward()`` failed inside the neurons' backward, and
``retain_graph=True`` did not help. Each IF neuron keeps its membrane potential ``v`` on the
module after the last time step, and the next batch starts from it.
Reduced: SpikingJelly's MultiStepIFNode (with its ATan surrogate gradient), SeqToANNContainer
and functional are written out in plain torch; a two-block SEW-ResNet at a toy size; random
images and class labels instead of the detection data and loss.
Corrected as the maintainer answers (and as SEW-ResNet's own train.py does): reset the whole
network's neuron states after the backward and the step, ``functional.reset_net(model_train)``,
so each batch's simulation starts from rest.
"""

import math

import torch
import torch.nn as nn


class atan(torch.autograd.Function):
    """Heaviside step forward, the ATan surrogate's derivative backward (spikingjelly.surrogate.ATan)."""

    @staticmethod
    def forward(ctx, x, alpha):
        if x.requires_grad:
            ctx.save_for_backward(x)
            ctx.alpha = alpha
        return (x >= 0).to(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        grad_x = ctx.alpha / 2 / (1 + (math.pi / 2 * ctx.alpha * x).pow(2)) * grad_output
        return grad_x, None


class MultiStepIFNode(nn.Module):
    def __init__(self, v_threshold=1.0, v_reset=0.0, detach_reset=False, alpha=2.0):
        super().__init__()
        self.v_threshold = v_threshold
        self.v_reset = v_reset
        self.detach_reset = detach_reset
        self.alpha = alpha
        self.v = v_reset

    def forward(self, x_seq: torch.Tensor):
        spike_seq = []
        for t in range(x_seq.shape[0]):
            h = self.v + x_seq[t]
            spike = atan.apply(h - self.v_threshold, self.alpha)
            spike_d = spike.detach() if self.detach_reset else spike
            self.v = h * (1.0 - spike_d) + self.v_reset * spike_d
            spike_seq.append(spike)
        return torch.stack(spike_seq)

    def reset(self):
        self.v = self.v_reset


class SeqToANNContainer(nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.module = nn.Sequential(*args)

    def forward(self, x_seq: torch.Tensor):
        y_shape = [x_seq.shape[0], x_seq.shape[1]]
        y_seq = self.module(x_seq.flatten(0, 1))
        y_shape.extend(y_seq.shape[1:])
        return y_seq.view(y_shape)


class functional:
    @staticmethod
    def reset_net(net: nn.Module):
        for m in net.modules():
            if hasattr(m, "reset"):
                m.reset()


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, connect_f=None):
        super(BasicBlock, self).__init__()
        self.connect_f = connect_f
        self.conv1 = SeqToANNContainer(conv3x3(inplanes, planes, stride), nn.BatchNorm2d(planes))
        self.sn1 = MultiStepIFNode(detach_reset=True)
        self.conv2 = SeqToANNContainer(conv3x3(planes, planes), nn.BatchNorm2d(planes))
        self.downsample = downsample
        self.stride = stride
        self.sn2 = MultiStepIFNode(detach_reset=True)

    def forward(self, x):
        identity = x

        out = self.sn1(self.conv1(x))

        out = self.sn2(self.conv2(out))

        if self.downsample is not None:
            identity = self.downsample(x)

        if self.connect_f == "ADD":
            out += identity
        elif self.connect_f == "AND":
            out *= identity
        elif self.connect_f == "IAND":
            out = identity * (1.0 - out)
        else:
            raise NotImplementedError(self.connect_f)

        return out


class SEWResNet(nn.Module):
    def __init__(self, block, layers, num_classes=10, T=4, connect_f=None):
        super(SEWResNet, self).__init__()
        self.T = T
        self.connect_f = connect_f
        self.inplanes = 16
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.sn1 = MultiStepIFNode(detach_reset=True)
        self.maxpool = SeqToANNContainer(nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
        self.layer1 = self._make_layer(block, 16, layers[0], connect_f=connect_f)
        self.layer2 = self._make_layer(block, 32, layers[1], stride=2, connect_f=connect_f)
        self.avgpool = SeqToANNContainer(nn.AdaptiveAvgPool2d((1, 1)))
        self.fc = nn.Linear(32 * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, block, planes, blocks, stride=1, connect_f=None):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                SeqToANNContainer(
                    conv1x1(self.inplanes, planes * block.expansion, stride),
                    nn.BatchNorm2d(planes * block.expansion),
                ),
                MultiStepIFNode(detach_reset=True),
            )
        layers = [block(self.inplanes, planes, stride, downsample, connect_f)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, connect_f=connect_f))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x.unsqueeze_(0)
        x = x.repeat(self.T, 1, 1, 1, 1)
        x = self.sn1(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 2)
        return self.fc(x.mean(dim=0))


def fit_one_epoch(model_train, model, loss_fn, optimizer, epoch, epoch_step, gen, Epoch):
    loss = 0
    model_train.train()
    for iteration, batch in enumerate(gen):
        if iteration >= epoch_step:
            break
        images, targets = batch

        optimizer.zero_grad()
        outputs = model_train(images)
        loss_value = loss_fn(outputs, targets)
        loss_value.backward()
        optimizer.step()
        functional.reset_net(model_train)

        loss += loss_value.item()
    print("Epoch:" + str(epoch + 1) + "/" + str(Epoch), "Total Loss: %.3f" % (loss / epoch_step))


if __name__ == "__main__":
    torch.manual_seed(0)
    gen = [(torch.rand(8, 3, 16, 16), torch.randint(0, 10, (8,))) for _ in range(4)]
    model = SEWResNet(BasicBlock, [1, 1], num_classes=10, T=4, connect_f="ADD")
    model_train = model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    Epoch = 2
    for epoch in range(Epoch):
        fit_one_epoch(model_train, model, loss_fn, optimizer, epoch, len(gen), gen, Epoch)
