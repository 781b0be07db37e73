"""A pure-PyTorch stand-in for timm's ConvNeXt (timm/models/convnext.py at pytorch-image-models
commit aa4b5850), for the tests and bench/compare's Python side: timm is not packaged for Debian,
so this rebuilds the parts convnext_tiny / small / base use, keeping timm's module names, module
registration order, construction order and init, so that state_dict keys, shapes, the seeded
initial weights and the forward math are timm's.

Covered: the 'patch' stem (4x4 conv + LayerNorm2d), stages with a LayerNorm2d + 2x2 stride-2 conv
downsample, blocks as timm's default conv_mlp=False (7x7 depthwise conv, permute to NHWC,
LayerNorm(eps 1e-6) -> Linear -> GELU -> Linear, permute back, layer scale gamma 1e-6), stochastic
depth (timm's calculate_drop_path_rates(stagewise=True): linear over all blocks), the
NormMlpClassifierHead (avg pool -> LayerNorm2d -> flatten -> dropout -> fc), _init_weights
(trunc_normal_(std .02) on every Conv2d / Linear, zero biases, head_init_scale 1) and
set_grad_checkpointing. Not covered: conv_mlp, GRN (V2), other stems / norms, output_stride.

    convnext_tiny(num_classes=1000)  ==  timm.create_model('convnext_tiny', num_classes=1000)
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from timm_resnet import DropPath, checkpoint_seq


class LayerNorm2d(nn.LayerNorm):
    """timm.layers.LayerNorm2d: LayerNorm over the channels of an NCHW tensor."""

    def __init__(self, num_channels, eps=1e-6):
        super().__init__(num_channels, eps=eps)

    def forward(self, x):
        x = F.layer_norm(x.permute(0, 2, 3, 1), self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class Mlp(nn.Module):
    """timm.layers.Mlp (use_conv=False, no norm, no dropout), shared with timm_vit.py."""

    def __init__(self, in_features, hidden_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.drop1 = nn.Dropout(0.0)
        self.norm = nn.Identity()
        self.fc2 = nn.Linear(hidden_features, in_features)
        self.drop2 = nn.Dropout(0.0)

    def forward(self, x):
        return self.drop2(self.fc2(self.norm(self.drop1(self.act(self.fc1(x))))))


class ConvNeXtBlock(nn.Module):
    def __init__(self, chs, ls_init_value=1e-6, drop_path=0.0):
        super().__init__()
        self.conv_dw = nn.Conv2d(chs, chs, 7, padding=3, groups=chs)  # create_conv2d(depthwise=True)
        self.norm = nn.LayerNorm(chs, eps=1e-6)
        self.mlp = Mlp(chs, 4 * chs)
        self.gamma = nn.Parameter(ls_init_value * torch.ones(chs))
        self.shortcut = nn.Identity()
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.conv_dw(x).permute(0, 2, 3, 1)
        x = self.mlp(self.norm(x)).permute(0, 3, 1, 2)
        x = x.mul(self.gamma.reshape(1, -1, 1, 1))
        return self.drop_path(x) + self.shortcut(shortcut)


class ConvNeXtStage(nn.Module):
    def __init__(self, in_chs, out_chs, stride, depth, drop_path_rates, ls_init_value):
        super().__init__()
        self.grad_checkpointing = False
        if in_chs != out_chs or stride > 1:
            self.downsample = nn.Sequential(LayerNorm2d(in_chs), nn.Conv2d(in_chs, out_chs, 2, stride=stride))
        else:
            self.downsample = nn.Identity()
        self.blocks = nn.Sequential(*[ConvNeXtBlock(out_chs, ls_init_value, drop_path_rates[i]) for i in range(depth)])

    def forward(self, x):
        x = self.downsample(x)
        return checkpoint_seq([self.blocks], x) if self.grad_checkpointing else self.blocks(x)


class NormMlpClassifierHead(nn.Module):
    """timm.layers.NormMlpClassifierHead without hidden layer: pool, norm, flatten, dropout, fc."""

    def __init__(self, in_features, num_classes, drop_rate):
        super().__init__()
        self.global_pool = nn.AdaptiveAvgPool2d(1)  # SelectAdaptivePool2d('avg'), no parameters
        self.norm = LayerNorm2d(in_features)
        self.flatten = nn.Flatten(1)
        self.pre_logits = nn.Identity()
        self.drop = nn.Dropout(drop_rate)
        self.fc = nn.Linear(in_features, num_classes)

    def forward(self, x):
        return self.fc(self.drop(self.pre_logits(self.flatten(self.norm(self.global_pool(x))))))


class ConvNeXt(nn.Module):
    def __init__(self, depths=(3, 3, 9, 3), dims=(96, 192, 384, 768), num_classes=1000, in_chans=3,
                 ls_init_value=1e-6, drop_rate=0.0, drop_path_rate=0.0):
        super().__init__()
        self.num_classes = num_classes
        self.drop_rate = drop_rate
        self.stem = nn.Sequential(nn.Conv2d(in_chans, dims[0], kernel_size=4, stride=4), LayerNorm2d(dims[0]))
        rates = [r.tolist() for r in torch.linspace(0, drop_path_rate, sum(depths)).split(list(depths))]
        prev = dims[0]
        stages = []
        for i in range(4):
            stages.append(ConvNeXtStage(prev, dims[i], 2 if i > 0 else 1, depths[i], rates[i], ls_init_value))
            prev = dims[i]
        self.stages = nn.Sequential(*stages)
        self.num_features = prev
        self.norm_pre = nn.Identity()
        self.head = NormMlpClassifierHead(prev, num_classes, drop_rate)
        for m in self.modules():  # named_apply(_init_weights): leaves in module order
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.trunc_normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias)

    def get_classifier(self):
        return self.head.fc

    def set_grad_checkpointing(self, enable=True):
        for s in self.stages:
            s.grad_checkpointing = enable

    def forward(self, x):
        x = self.norm_pre(self.stages(self.stem(x)))
        return self.head(x)


def convnext_tiny(**kwargs):
    return ConvNeXt(depths=(3, 3, 9, 3), dims=(96, 192, 384, 768), **kwargs)


def convnext_small(**kwargs):
    return ConvNeXt(depths=(3, 3, 27, 3), dims=(96, 192, 384, 768), **kwargs)


def convnext_base(**kwargs):
    return ConvNeXt(depths=(3, 3, 27, 3), dims=(128, 256, 512, 1024), **kwargs)
