"""Cross-view geo-localization (drone and satellite views of University-1652) with RK-Net's USAM.

Source: https://github.com/AggMan96/RK-Net/issues/9
"RuntimeError: one of the variables needed for gradient computation has been modified by an
inplace operation: [torch.cuda.FloatTensor [8, 1, 96, 96]], which is output 0 of ReluBackward0".
Running train.py, the unit subtraction attention module (USAM) "polishes" its attention map by
zeroing the map's border in place (``att[:, :, :, 0] = 0`` ...) right after the ReLU, which saved
that map for its backward.
Reduced: a small ResNet-shaped backbone stands in for the ImageNet ResNet-50; random images and
labels for the satellite and drone loaders; two views, no shared weights, no fp16.
Corrected as the answer in the issue says: ``att = att.clone()`` under ``if self.polish:``, so
the border is zeroed in a copy and the ReLU's saved output is left as it was.
"""

import torch
import torch.nn as nn
from torch.nn import init
from torch.nn import functional as F
from torch.optim import lr_scheduler


class USAM(nn.Module):
    def __init__(self, kernel_size=3, padding=1, polish=True):
        super(USAM, self).__init__()

        kernel = torch.ones((kernel_size, kernel_size))
        kernel = kernel.unsqueeze(0).unsqueeze(0)
        self.weight = nn.Parameter(data=kernel, requires_grad=False)

        kernel2 = torch.ones((1, 1)) * (kernel_size * kernel_size)
        kernel2 = kernel2.unsqueeze(0).unsqueeze(0)
        self.weight2 = nn.Parameter(data=kernel2, requires_grad=False)

        self.polish = polish
        self.pad = padding
        self.relu = nn.ReLU()
        self.bn = nn.BatchNorm2d(1)

    def __call__(self, x):
        fmap = x.sum(1, keepdim=True)
        x1 = F.conv2d(fmap, self.weight, padding=self.pad)
        x2 = F.conv2d(fmap, self.weight2, padding=0)

        att = x2 - x1
        att = self.bn(att)
        att = self.relu(att)

        if self.polish:
            att = att.clone()
            att[:, :, :, 0] = 0
            att[:, :, :, -1] = 0
            att[:, :, 0, :] = 0
            att[:, :, -1, :] = 0

        output = x + att * x

        return output


def weights_init_kaiming(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        init.kaiming_normal_(m.weight.data, a=0, mode="fan_in")
    elif classname.find("Linear") != -1:
        init.kaiming_normal_(m.weight.data, a=0, mode="fan_out")
        init.constant_(m.bias.data, 0.0)
    elif classname.find("BatchNorm1d") != -1:
        init.normal_(m.weight.data, 1.0, 0.02)
        init.constant_(m.bias.data, 0.0)


def weights_init_classifier(m):
    classname = m.__class__.__name__
    if classname.find("Linear") != -1:
        init.normal_(m.weight.data, std=0.001)
        init.constant_(m.bias.data, 0.0)


class ClassBlock(nn.Module):
    def __init__(self, input_dim, class_num, droprate, num_bottleneck=32):
        super(ClassBlock, self).__init__()
        add_block = [nn.Linear(input_dim, num_bottleneck), nn.BatchNorm1d(num_bottleneck)]
        if droprate > 0:
            add_block += [nn.Dropout(p=droprate)]
        add_block = nn.Sequential(*add_block)
        add_block.apply(weights_init_kaiming)

        classifier = nn.Sequential(nn.Linear(num_bottleneck, class_num))
        classifier.apply(weights_init_classifier)

        self.add_block = add_block
        self.classifier = classifier

    def forward(self, x):
        x = self.add_block(x)
        x = self.classifier(x)
        return x


def conv_bn_relu(cin, cout, stride):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)
    )


class SmallResNet(nn.Module):
    """The attributes of torchvision's resnet50 that ft_net uses, at a toy size."""

    def __init__(self):
        super(SmallResNet, self).__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = conv_bn_relu(8, 8, 1)
        self.layer2 = conv_bn_relu(8, 16, 2)
        self.layer3 = conv_bn_relu(16, 32, 2)
        self.layer4 = conv_bn_relu(32, 64, 2)


class ft_net(nn.Module):
    def __init__(self, class_num, droprate=0.5, stride=2, pool="avg"):
        super(ft_net, self).__init__()
        model_ft = SmallResNet()
        self.pool = pool
        model_ft.avgpool2 = nn.AdaptiveAvgPool2d((1, 1))
        self.model = model_ft

        self.usam_1 = USAM()
        self.usam_2 = USAM()

    def forward(self, x):
        x = self.model.conv1(x)
        x = self.model.bn1(x)
        x = self.model.relu(x)
        x = self.usam_1(x)
        x = self.model.maxpool(x)
        x = self.model.layer1(x)
        x = self.usam_2(x)
        x = self.model.layer2(x)
        x = self.model.layer3(x)
        x = self.model.layer4(x)
        x = self.model.avgpool2(x)
        x = x.view(x.size(0), x.size(1))
        return x


class two_view_net(nn.Module):
    def __init__(self, class_num, droprate, stride=2, pool="avg", share_weight=False):
        super(two_view_net, self).__init__()
        self.model_1 = ft_net(class_num, stride=stride, pool=pool)
        if share_weight:
            self.model_2 = self.model_1
        else:
            self.model_2 = ft_net(class_num, stride=stride, pool=pool)
        self.classifier = ClassBlock(64, class_num, droprate)

    def forward(self, x1, x2):
        if x1 is None:
            y1 = None
        else:
            x1 = self.model_1(x1)
            y1 = self.classifier(x1)

        if x2 is None:
            y2 = None
        else:
            x2 = self.model_2(x2)
            y2 = self.classifier(x2)
        return y1, y2


def train_model(model, criterion, optimizer, scheduler, dataloaders, num_epochs=2, warm_epoch=1):
    warm_up = 0.1  # We start from the 0.1*lrRate
    warm_iteration = len(dataloaders["satellite"]) * warm_epoch
    for epoch in range(num_epochs):
        model.train(True)
        running_loss = 0.0
        for data, data2 in zip(dataloaders["satellite"], dataloaders["drone"]):
            inputs, labels = data
            inputs2, labels2 = data2

            optimizer.zero_grad()
            outputs, outputs2 = model(inputs, inputs2)
            loss = criterion(outputs, labels) + criterion(outputs2, labels2)
            if epoch < warm_epoch:
                warm_up = min(1.0, warm_up + 0.9 / warm_iteration)
                loss *= warm_up

            loss.backward()
            optimizer.step()
            running_loss += loss.item() * inputs.size(0)
        scheduler.step()
        print("Epoch {} Loss: {:.4f}".format(epoch, running_loss / (len(dataloaders["satellite"]) * 8)))
    return model


if __name__ == "__main__":
    torch.manual_seed(0)
    class_num, batchsize = 10, 8
    dataloaders = {
        view: [(torch.randn(batchsize, 3, 32, 32), torch.randint(0, class_num, (batchsize,))) for _ in range(3)]
        for view in ("satellite", "drone")
    }
    model = two_view_net(class_num, droprate=0.5, stride=2, pool="avg", share_weight=False)

    lr = 0.01
    ignored_params = list(map(id, model.classifier.parameters()))
    base_params = filter(lambda p: id(p) not in ignored_params, model.parameters())
    optimizer_ft = torch.optim.SGD(
        [{"params": base_params, "lr": 0.1 * lr}, {"params": model.classifier.parameters(), "lr": lr}],
        weight_decay=5e-4,
        momentum=0.9,
        nesterov=True,
    )
    exp_lr_scheduler = lr_scheduler.StepLR(optimizer_ft, step_size=200, gamma=0.1)
    criterion = nn.CrossEntropyLoss()
    model = train_model(model, criterion, optimizer_ft, exp_lr_scheduler, dataloaders, num_epochs=2)
