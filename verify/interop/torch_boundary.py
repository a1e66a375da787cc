"""The boundary as a PyTorch user writes it: plain tensor code, no attention to rounding order.

It is this project's peer, not its reference: `torch.compile` of `boundary` is what a user would
pick instead of the fused kernels (the GPU benchmark times it side by side), and the same function
run as an external implementation shows what the gate reports for code that sums in another order.
The constants are the dict of a constants JSON file (contract section 9); `*_fma_squares` has no
plain-PyTorch spelling and is ignored here.
"""
import torch


def rms_norm(x, weight, constants, side):
    """RMSNorm of x (any dtype) in FP32, with the gain (weight + centre, in the weight's dtype)
    applied before the norm when `{side}_input_scale`, after it otherwise."""
    xf = x.float()
    gamma = None
    if weight is not None:
        gamma = (weight + constants[f"{side}_gain_center"]).float()
        if constants.get(f"{side}_input_scale", False):
            xf = xf * gamma
            gamma = None
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + constants[f"{side}_eps"])
    return y if gamma is None else y * gamma


def all_reduce(partials):
    """The R rank partials [R, m, H] summed in rank order in FP32, rounded once to BF16."""
    acc = partials[0].float()
    for r in range(1, partials.shape[0]):
        acc = acc + partials[r].float()
    return acc.to(torch.bfloat16)


def boundary(branch, stream, alpha, beta, post_weight, pre_weight, constants):
    """Returns (out BF16 [m, H], new_stream FP32 [m, H])."""
    y_b = rms_norm(branch, post_weight, constants, "post").to(torch.bfloat16)
    new_stream = alpha * stream.float() + beta * y_b.float()
    out = rms_norm(new_stream.to(torch.bfloat16), pre_weight, constants, "pre").to(torch.bfloat16)
    return out, new_stream


def all_reduce_boundary(partials, stream, alpha, beta, post_weight, pre_weight, constants):
    return boundary(all_reduce(partials), stream, alpha, beta, post_weight, pre_weight, constants)
