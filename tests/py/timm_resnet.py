"""A pure-PyTorch stand-in for timm's ResNet (timm/models/resnet.py), for the tests: timm is not
packaged for Debian, so this rebuilds the parts trainrun's resnet50d depends on, keeping timm's
module names, module registration order, construction order and init, so that state_dict keys,
shapes, the seeded initial weights and the forward math are timm's.

Covered: BasicBlock / Bottleneck, stem_type '' or 'deep' (stem_width, stem_width, 2*stem_width),
avg_down (AvgPool2d(2, ceil_mode=True, count_include_pad=False) -> 1x1 conv -> BN shortcut),
drop_rate (dropout before fc), drop_path_rate (stochastic depth, linear over blocks) and
zero_init_last. Not covered (trainrun has no such variants): cardinality/base_width, attention,
anti-aliasing, DropBlock, output_stride/dilation, other pools.

    resnet50d(num_classes=1000)  ==  timm.create_model('resnet50d', num_classes=1000)
"""
import torch
import torch.nn as nn
import torch.utils.checkpoint
import torch.nn.functional as F


class DropPath(nn.Module):
    """timm.layers.DropPath: drop whole residual branches per sample, scaled by 1/keep."""

    def __init__(self, drop_prob):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        if self.drop_prob == 0.0 or not self.training:
            return x
        keep = 1.0 - self.drop_prob
        mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
        return x * mask.div_(keep)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, drop_path=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.drop_block = nn.Identity()
        self.act1 = nn.ReLU(inplace=True)
        self.aa = nn.Identity()
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.se = None
        self.act2 = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.drop_path = drop_path

    def zero_init_last(self):
        nn.init.zeros_(self.bn2.weight)

    def forward(self, x):
        shortcut = x
        x = self.aa(self.act1(self.drop_block(self.bn1(self.conv1(x)))))
        x = self.bn2(self.conv2(x))
        if self.drop_path is not None:
            x = self.drop_path(x)
        if self.downsample is not None:
            shortcut = self.downsample(shortcut)
        return self.act2(x + shortcut)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, drop_path=None):
        super().__init__()
        outplanes = planes * self.expansion
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.act1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.drop_block = nn.Identity()
        self.act2 = nn.ReLU(inplace=True)
        self.aa = nn.Identity()
        self.conv3 = nn.Conv2d(planes, outplanes, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(outplanes)
        self.se = None
        self.act3 = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.drop_path = drop_path

    def zero_init_last(self):
        nn.init.zeros_(self.bn3.weight)

    def forward(self, x):
        shortcut = x
        x = self.act1(self.bn1(self.conv1(x)))
        x = self.aa(self.act2(self.drop_block(self.bn2(self.conv2(x)))))
        x = self.bn3(self.conv3(x))
        if self.drop_path is not None:
            x = self.drop_path(x)
        if self.downsample is not None:
            shortcut = self.downsample(shortcut)
        return self.act3(x + shortcut)


def shortcut(inplanes, outplanes, stride, avg_down):
    """timm's downsample_avg (pool, conv, norm) or downsample_conv (conv, norm)."""
    conv = nn.Conv2d(inplanes, outplanes, 1, stride=1 if avg_down else stride, bias=False)
    norm = nn.BatchNorm2d(outplanes)
    if not avg_down:
        return nn.Sequential(conv, norm)
    pool = nn.AvgPool2d(2, stride, ceil_mode=True, count_include_pad=False) if stride != 1 else nn.Identity()
    return nn.Sequential(pool, conv, norm)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000, in_chans=3, stem_width=64, stem_type='',
                 avg_down=False, drop_rate=0.0, drop_path_rate=0.0, zero_init_last=True):
        super().__init__()
        self.num_classes = num_classes
        self.drop_rate = drop_rate
        inplanes = stem_width * 2 if stem_type == 'deep' else 64
        if stem_type == 'deep':
            self.conv1 = nn.Sequential(
                nn.Conv2d(in_chans, stem_width, 3, stride=2, padding=1, bias=False),
                nn.BatchNorm2d(stem_width),
                nn.ReLU(inplace=True),
                nn.Conv2d(stem_width, stem_width, 3, stride=1, padding=1, bias=False),
                nn.BatchNorm2d(stem_width),
                nn.ReLU(inplace=True),
                nn.Conv2d(stem_width, inplanes, 3, stride=1, padding=1, bias=False))
        else:
            self.conv1 = nn.Conv2d(in_chans, inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(inplanes)
        self.act1 = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

        total, index = sum(layers), 0
        for stage, (planes, blocks) in enumerate(zip((64, 128, 256, 512), layers)):
            stride = 1 if stage == 0 else 2
            outplanes = planes * block.expansion
            down = shortcut(inplanes, outplanes, stride, avg_down) \
                if stride != 1 or inplanes != outplanes else None
            seq = []
            for b in range(blocks):
                rate = drop_path_rate * index / (total - 1)
                seq.append(block(inplanes, planes, stride if b == 0 else 1, down if b == 0 else None,
                                 DropPath(rate) if rate > 0 else None))
                inplanes = outplanes
                index += 1
            self.add_module(f'layer{stage + 1}', nn.Sequential(*seq))

        self.num_features = 512 * block.expansion
        self.global_pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(1))  # SelectAdaptivePool2d('avg')
        self.fc = nn.Linear(self.num_features, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')
        if zero_init_last:
            for m in self.modules():
                if hasattr(m, 'zero_init_last'):
                    m.zero_init_last()

    def set_grad_checkpointing(self, enable=True):
        self.grad_checkpointing = enable

    def forward(self, x):
        x = self.maxpool(self.act1(self.bn1(self.conv1(x))))
        if getattr(self, 'grad_checkpointing', False):
            x = checkpoint_seq([self.layer1, self.layer2, self.layer3, self.layer4], x)
        else:
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = self.global_pool(x)
        if self.drop_rate:
            x = F.dropout(x, p=float(self.drop_rate), training=self.training)
        return self.fc(x)


def checkpoint_seq(stages, x):
    """timm's checkpoint_seq(stages, x, flatten=True) as ResNet.forward_features calls it when
    set_grad_checkpointing() is on (timm/models/_manipulate.py and resnet.py, pytorch-image-models
    commit aa4b5850): the stages' blocks flattened into one sequence, each block (every=1) run
    through torch.utils.checkpoint.checkpoint with timm's default use_reentrant=False and
    preserve_rng_state=True."""
    for block in [b for stage in stages for b in stage]:
        x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
    return x


def resnet50d(**kwargs):
    return ResNet(Bottleneck, [3, 4, 6, 3], stem_width=32, stem_type='deep', avg_down=True, **kwargs)


def resnet18(**kwargs):
    return ResNet(BasicBlock, [2, 2, 2, 2], **kwargs)
