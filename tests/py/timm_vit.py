"""A pure-PyTorch stand-in for timm's VisionTransformer (timm/models/vision_transformer.py and
timm/layers/{attention,patch_embed}.py at pytorch-image-models commit aa4b5850), for the tests and
bench/compare's Python side: timm is not packaged for Debian, so this rebuilds what
vit_tiny/small/base_patch16_224 use, keeping timm's module names, registration order,
construction order and init, so that state_dict keys, shapes, the seeded initial weights and the
forward math are timm's.

Covered: PatchEmbed (16x16 stride-16 conv, flatten to tokens), class token + learned position
embedding (added after the concat), pre-norm blocks (LayerNorm eps 1e-6, Attention with a fused
qkv Linear, Mlp with GELU), stochastic depth (linear over the blocks), the final norm, the
class-token pool and the head; timm's default init (construction-time defaults, then
trunc_normal_(.02) on pos_embed, normal_(1e-6) on cls_token, trunc_normal_(.02) / zero bias on
every Linear; the patch conv keeps PyTorch's default) and set_grad_checkpointing. Attention runs
F.scaled_dot_product_attention where torch has it (2.x), as timm does by default, and timm's
explicit softmax(q k^T * scale) v otherwise (1.13). Not covered: other image sizes (no
pos_embed resampling), register tokens, layer scale, qk norm, other pools.

    vit_small_patch16_224(num_classes=1000)  ==  timm.create_model('vit_small_patch16_224', num_classes=1000)
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from timm_convnext import Mlp
from timm_resnet import DropPath, checkpoint_seq

FUSED_ATTN = hasattr(F, "scaled_dot_product_attention")  # timm's use_fused_attn() default


def layer_norm(dim):
    return nn.LayerNorm(dim, eps=1e-6)  # timm.layers.LayerNorm


class PatchEmbed(nn.Module):
    def __init__(self, img_size, patch_size, in_chans, embed_dim):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.norm = nn.Identity()

    def forward(self, x):
        return self.norm(self.proj(x).flatten(2).transpose(1, 2))


class Attention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.q_norm = nn.Identity()
        self.k_norm = nn.Identity()
        self.attn_drop = nn.Dropout(0.0)
        self.norm = nn.Identity()
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(0.0)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q, k = self.q_norm(q), self.k_norm(k)
        if FUSED_ATTN:
            x = F.scaled_dot_product_attention(q, k, v)
        else:
            attn = (q * self.scale) @ k.transpose(-2, -1)
            x = self.attn_drop(attn.softmax(dim=-1)) @ v
        x = self.norm(x.transpose(1, 2).reshape(B, N, C))
        return self.proj_drop(self.proj(x))


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio, drop_path):
        super().__init__()
        self.norm1 = layer_norm(dim)
        self.attn = Attention(dim, num_heads)
        self.ls1 = nn.Identity()
        self.drop_path1 = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.norm2 = layer_norm(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        self.ls2 = nn.Identity()
        self.drop_path2 = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
        return x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))


class VisionTransformer(nn.Module):
    def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, embed_dim=768, depth=12,
                 num_heads=12, mlp_ratio=4.0, drop_rate=0.0, drop_path_rate=0.0):
        super().__init__()
        self.num_classes = num_classes
        self.grad_checkpointing = False
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        self.cls_token = nn.Parameter(torch.empty(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.empty(1, self.patch_embed.num_patches + 1, embed_dim))
        self.pos_drop = nn.Dropout(0.0)
        self.patch_drop = nn.Identity()
        self.norm_pre = nn.Identity()
        rates = [r.item() for r in torch.linspace(0, drop_path_rate, depth)]
        self.blocks = nn.Sequential(*[Block(embed_dim, num_heads, mlp_ratio, rates[i]) for i in range(depth)])
        self.norm = layer_norm(embed_dim)
        self.fc_norm = nn.Identity()
        self.head_drop = nn.Dropout(drop_rate)
        self.head = nn.Linear(embed_dim, num_classes)
        # init_weights(needs_reset=False): the modules keep their construction-time init but Linear's
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.normal_(self.cls_token, std=1e-6)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias)

    def get_classifier(self):
        return self.head

    def set_grad_checkpointing(self, enable=True):
        self.grad_checkpointing = enable

    def forward(self, x):
        x = self.patch_embed(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = self.norm_pre(self.patch_drop(self.pos_drop(x + self.pos_embed)))
        x = checkpoint_seq([self.blocks], x) if self.grad_checkpointing else self.blocks(x)
        x = self.fc_norm(self.norm(x)[:, 0])
        return self.head(self.head_drop(x))


def vit_tiny_patch16_224(**kwargs):
    return VisionTransformer(patch_size=16, embed_dim=192, depth=12, num_heads=3, **kwargs)


def vit_small_patch16_224(**kwargs):
    return VisionTransformer(patch_size=16, embed_dim=384, depth=12, num_heads=6, **kwargs)


def vit_base_patch16_224(**kwargs):
    return VisionTransformer(patch_size=16, embed_dim=768, depth=12, num_heads=12, **kwargs)
