"""Reference optimizers the tests cannot import: timm's Lion and Lamb (timm is not packaged for
Debian), and torch 2.x's NAdam where the installed torch is 1.13.

Each is re-derived from the real source, read at:
- Lion: timm/optim/lion.py, huggingface/pytorch-image-models aa4b5850c1543fa488abf260f18390eda46cf85d
  (Lion._single_tensor_lion): decoupled decay p *= 1 - lr*wd; update = sign(m*beta1 + g*(1-beta1));
  p -= lr*update; m.lerp_(g, 1-beta2). Only the defaults' caution=False, maximize=False,
  corrected_weight_decay=False path.
- Lamb: timm/optim/lamb.py at the same commit (Lamb.step, Lamb._get_clip_grad_norm): global grad
  norm clip from the defaults' max_grad_norm (grads divided in place), a step count per group,
  Adam moments with grad_averaging, L2 decay added to the update, trust ratio ||p||/||update||
  (1 where either is 0, clamped at 1 with trust_clip) where weight_decay != 0 or always_adapt.
  Only caution=False, decoupled_decay=False.
- NAdam: torch/optim/nadam.py::_single_tensor_nadam of torch >= 2.0 (pytorch/pytorch#92699 fixed
  mu_product_next = mu_product * mu_next; 1.13 multiplies by mu once more; unchanged through
  v2.6.0 apart from the optional decoupled_weight_decay, off by default). `nadam(params, **kw)`
  returns torch.optim.NAdam(foreach=False) where torch >= 2, else this re-derivation.
"""
import torch


class Lion(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr = group["lr"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                m = state["exp_avg"]
                p.mul_(1 - lr * group["weight_decay"])
                p.add_(m.mul(beta1).add_(p.grad, alpha=1 - beta1).sign_(), alpha=-lr)
                m.lerp_(p.grad, 1 - beta2)


class Lamb(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, bias_correction=True, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01,
                 grad_averaging=True, max_grad_norm=1.0, trust_clip=False, always_adapt=False):
        super().__init__(params, dict(lr=lr, bias_correction=bias_correction, betas=betas, eps=eps,
                                      weight_decay=weight_decay, grad_averaging=grad_averaging,
                                      max_grad_norm=max_grad_norm, trust_clip=trust_clip, always_adapt=always_adapt))

    def _clip(self):
        limit = self.defaults["max_grad_norm"]
        if limit is None:
            return None
        norms = [torch.linalg.vector_norm(p.grad) for g in self.param_groups for p in g["params"] if p.grad is not None]
        return (torch.linalg.vector_norm(torch.stack(norms)) / limit).clamp_(min=1.0)

    @torch.no_grad()
    def step(self):
        clip = self._clip()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            beta3 = 1 - beta1 if group["grad_averaging"] else 1.0
            group["step"] = group.get("step", 0) + 1
            if not any(p.grad is not None for p in group["params"]):
                continue
            t = group["step"]
            bc1, bc2 = (1 - beta1 ** t, 1 - beta2 ** t) if group["bias_correction"] else (1.0, 1.0)
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if clip is not None:
                    grad.div_(clip)
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(beta1).add_(grad, alpha=beta3)
                v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                update = (m / bc1).div_((v.sqrt() / (bc2 ** 0.5)).add_(group["eps"]))
                wd = group["weight_decay"]
                if wd != 0:
                    update.add_(p, alpha=wd)
                if wd != 0 or group["always_adapt"]:
                    w_norm, u_norm = p.norm(2.0), update.norm(2.0)
                    ratio = torch.where(w_norm > 0, torch.where(u_norm > 0, w_norm / u_norm, 1.0), 1.0)
                    if group["trust_clip"]:
                        ratio = torch.clamp(ratio, max=1.0)
                    update.mul_(ratio)
                p.add_(update, alpha=-group["lr"])


class _NAdam2(torch.optim.Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, wd, psi = group["lr"], group["weight_decay"], group["momentum_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = torch.tensor(0.0)
                    state["mu_product"] = torch.tensor(1.0)
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                t = state["step"].item()
                grad = p.grad if wd == 0 else p.grad.add(p, alpha=wd)
                mu = beta1 * (1. - 0.5 * (0.96 ** (t * psi)))
                mu_next = beta1 * (1. - 0.5 * (0.96 ** ((t + 1) * psi)))
                state["mu_product"] *= mu
                state["exp_avg"].lerp_(grad, 1 - beta1)
                state["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = state["exp_avg_sq"].div(1 - beta2 ** t).sqrt().add_(group["eps"])
                mu_product = state["mu_product"].item()
                p.addcdiv_(grad, denom, value=-lr * (1. - mu) / (1. - mu_product))
                p.addcdiv_(state["exp_avg"], denom, value=(-lr * mu_next) / (1. - mu_product * mu_next))


def torch_major():
    return int(torch.__version__.split(".")[0])


def nadam(params, **kw):
    if torch_major() >= 2:
        return torch.optim.NAdam(params, foreach=False, **kw)
    return _NAdam2(params, **kw)
