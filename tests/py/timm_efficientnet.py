"""A pure-PyTorch stand-in for timm's EfficientNet (timm/models/efficientnet.py,
_efficientnet_builder.py and _efficientnet_blocks.py at pytorch-image-models commit aa4b5850), for
the tests and bench/compare's Python side: timm is not packaged for Debian, so this rebuilds what
efficientnet_b0..b3 use, keeping timm's module names, registration order, construction order and
init, so that state_dict keys, shapes, the seeded initial weights and the forward math are timm's.

Covered: the B0 block table (timm's 'ds_r1_k3_s1_e1_c16_se0.25', 'ir_r2_k3_s2_e6_c24_se0.25', ...)
scaled by channel / depth multipliers (round_channels, make_divisible, ceil of repeats), the stem,
DepthwiseSeparableConv and InvertedResidual blocks with SqueezeExcite (reduction from the block
input: se_ratio / exp_ratio, SiLU, sigmoid gate), BatchNormAct2d (BatchNorm2d + SiLU, one module
as in timm's state_dict), stochastic depth (drop_path_rate * block index / block count), the 1x1
head conv, avg pool, dropout and classifier; _init_weight_goog over named_modules() (normal with
TF's fan-out on convs, uniform 1/sqrt(fan_out) on the Linear), including the RNG the builder
draws for its throw-away SqueezeExcite(8, rd_ratio=1.0) probe; set_grad_checkpointing. Not
covered: other block types (ER, ConvBnAct, CondConv), 'same' padding, s2d, output_stride.

    efficientnet_b0(num_classes=1000)  ==  timm.create_model('efficientnet_b0', num_classes=1000)
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from timm_resnet import DropPath, checkpoint_seq

# (block type, repeats, kernel, stride, expansion, out channels); every block has SE 0.25
B0_STAGES = [("ds", 1, 3, 1, 1, 16), ("ir", 2, 3, 2, 6, 24), ("ir", 2, 5, 2, 6, 40), ("ir", 3, 3, 2, 6, 80),
             ("ir", 3, 5, 1, 6, 112), ("ir", 4, 5, 2, 6, 192), ("ir", 1, 3, 1, 6, 320)]
SE_RATIO = 0.25


def make_divisible(v, divisor=8, min_value=None, round_limit=0.9):
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < round_limit * v else new_v


def round_channels(channels, multiplier):
    return make_divisible(channels * multiplier) if multiplier else channels


class BatchNormAct2d(nn.BatchNorm2d):
    """timm.layers.BatchNormAct2d: BatchNorm2d's parameters and buffers, then drop and act."""

    def __init__(self, num_features, apply_act=True):
        super().__init__(num_features)
        self.drop = nn.Identity()
        self.act = nn.SiLU(inplace=True) if apply_act else nn.Identity()

    def forward(self, x):
        return self.act(self.drop(super().forward(x)))


class SqueezeExcite(nn.Module):
    def __init__(self, in_chs, rd_ratio=0.25, act_layer=nn.ReLU):
        super().__init__()
        rd_channels = round(in_chs * rd_ratio)
        self.conv_reduce = nn.Conv2d(in_chs, rd_channels, 1, bias=True)
        self.act1 = act_layer(inplace=True)
        self.conv_expand = nn.Conv2d(rd_channels, in_chs, 1, bias=True)
        self.gate = nn.Sigmoid()

    def forward(self, x):
        x_se = self.conv_expand(self.act1(self.conv_reduce(x.mean((2, 3), keepdim=True))))
        return x * self.gate(x_se)


def conv(in_chs, out_chs, k, stride=1, groups=1):
    """create_conv2d with timm's default (symmetric, static) padding, no bias."""
    return nn.Conv2d(in_chs, out_chs, k, stride=stride, padding=((stride - 1) + (k - 1)) // 2, groups=groups,
                     bias=False)


class DepthwiseSeparableConv(nn.Module):
    def __init__(self, in_chs, out_chs, k, stride, se_ratio, drop_path_rate):
        super().__init__()
        self.has_skip = stride == 1 and in_chs == out_chs
        self.conv_dw = conv(in_chs, in_chs, k, stride, groups=in_chs)
        self.bn1 = BatchNormAct2d(in_chs)
        self.aa = nn.Identity()
        self.se = SqueezeExcite(in_chs, se_ratio, nn.SiLU)
        self.conv_pw = conv(in_chs, out_chs, 1)
        self.bn2 = BatchNormAct2d(out_chs, apply_act=False)
        self.drop_path = DropPath(drop_path_rate) if drop_path_rate else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.bn2(self.conv_pw(self.se(self.aa(self.bn1(self.conv_dw(x))))))
        return self.drop_path(x) + shortcut if self.has_skip else x


class InvertedResidual(nn.Module):
    def __init__(self, in_chs, out_chs, k, stride, exp_ratio, se_ratio, drop_path_rate):
        super().__init__()
        self.has_skip = in_chs == out_chs and stride == 1
        mid_chs = make_divisible(in_chs * exp_ratio)
        self.conv_pw = conv(in_chs, mid_chs, 1)
        self.bn1 = BatchNormAct2d(mid_chs)
        self.conv_dw = conv(mid_chs, mid_chs, k, stride, groups=mid_chs)
        self.bn2 = BatchNormAct2d(mid_chs)
        self.aa = nn.Identity()
        self.se = SqueezeExcite(mid_chs, se_ratio, nn.SiLU)
        self.conv_pwl = conv(mid_chs, out_chs, 1)
        self.bn3 = BatchNormAct2d(out_chs, apply_act=False)
        self.drop_path = DropPath(drop_path_rate) if drop_path_rate else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.se(self.aa(self.bn2(self.conv_dw(self.bn1(self.conv_pw(x))))))
        x = self.bn3(self.conv_pwl(x))
        return self.drop_path(x) + shortcut if self.has_skip else x


def build_blocks(in_chs, channel_multiplier, depth_multiplier, drop_path_rate):
    """EfficientNetBuilder(...)(stem_size, decode_arch_def(B0 table, depth_multiplier))."""
    SqueezeExcite(8, rd_ratio=1.0)  # the builder's probe of se_layer's signature: it draws from the RNG
    repeats = [int(math.ceil(r * depth_multiplier)) for _, r, *_ in B0_STAGES]
    total, index, stages = sum(repeats), 0, []
    for (kind, _, k, stride, exp, out), reps in zip(B0_STAGES, repeats):
        out_chs, blocks = round_channels(out, channel_multiplier), []
        for i in range(reps):
            s, rate = stride if i == 0 else 1, drop_path_rate * index / total
            if kind == "ds":
                blocks.append(DepthwiseSeparableConv(in_chs, out_chs, k, s, SE_RATIO, rate))
            else:  # se_from_exp=False: the ratio of the block input, applied to the expanded channels
                blocks.append(InvertedResidual(in_chs, out_chs, k, s, exp, SE_RATIO / exp, rate))
            in_chs, index = out_chs, index + 1
        stages.append(nn.Sequential(*blocks))
    return stages, in_chs


class EfficientNet(nn.Module):
    def __init__(self, channel_multiplier=1.0, depth_multiplier=1.0, num_classes=1000, in_chans=3,
                 drop_rate=0.0, drop_path_rate=0.0):
        super().__init__()
        self.num_classes = num_classes
        self.drop_rate = drop_rate
        self.grad_checkpointing = False
        stem_size = round_channels(32, channel_multiplier)
        self.conv_stem = conv(in_chans, stem_size, 3, stride=2)
        self.bn1 = BatchNormAct2d(stem_size)
        stages, head_chs = build_blocks(stem_size, channel_multiplier, depth_multiplier, drop_path_rate)
        self.blocks = nn.Sequential(*stages)
        self.num_features = round_channels(1280, channel_multiplier)
        self.conv_head = conv(head_chs, self.num_features, 1)
        self.bn2 = BatchNormAct2d(self.num_features)
        self.global_pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(1))  # SelectAdaptivePool2d
        self.classifier = nn.Linear(self.num_features, num_classes)
        for m in self.modules():  # _init_weight_goog
            if isinstance(m, nn.Conv2d):
                fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels // m.groups
                nn.init.normal_(m.weight, 0, math.sqrt(2.0 / fan_out))
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                init_range = 1.0 / math.sqrt(m.weight.size(0))
                nn.init.uniform_(m.weight, -init_range, init_range)
                nn.init.zeros_(m.bias)

    def get_classifier(self):
        return self.classifier

    def set_grad_checkpointing(self, enable=True):
        self.grad_checkpointing = enable

    def forward(self, x):
        x = self.bn1(self.conv_stem(x))
        x = checkpoint_seq(list(self.blocks), x) if self.grad_checkpointing else self.blocks(x)
        x = self.global_pool(self.bn2(self.conv_head(x)))
        if self.drop_rate > 0.0:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        return self.classifier(x)


def efficientnet_b0(**kwargs):
    return EfficientNet(1.0, 1.0, **kwargs)


def efficientnet_b1(**kwargs):
    return EfficientNet(1.0, 1.1, **kwargs)


def efficientnet_b2(**kwargs):
    return EfficientNet(1.1, 1.2, **kwargs)


def efficientnet_b3(**kwargs):
    return EfficientNet(1.2, 1.4, **kwargs)
