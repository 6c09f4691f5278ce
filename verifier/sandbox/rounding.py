"""How far fp32 rounding can move each output of a task: the scale the second opinion allows errors against.

The task runs in float64 several times with every operation's result disturbed the way computing it in fp32
would disturb it (Monte Carlo arithmetic): each floating-point result is multiplied by `1 + δ` with `δ` uniform
in `[-u, u]`, `u = 2^-24`, and a reduction gets the error of adding its terms in fp32 the way a kernel with
the narrowest block would, `LANES` running sums that each take every `LANES`-th term: normal noise of standard
deviation `u·sqrt(Σ S²)` over every partial sum `S` of every lane. A cumulative sum counts its own outputs one
after another; a matrix product or a convolution, whose partial sums would take `K` times the output's memory,
`u·sqrt(K·Σ_k t_k²)`, the same for terms of random sign. Operations PyTorch can decompose (a group norm into
means, variances and elementwise steps) are decomposed first, so the rounding of their intermediates counts too.
The largest change of each output over the runs is its rounding noise: how much an honest fp32 kernel, adding
in any reasonable order, may differ from the float64 answer.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch._decomp import decomposition_table
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

from verifier.sandbox.compare import Noise

FP32_UNIT_ROUNDOFF = 2.0**-24
SAMPLES = 3
LANES = 16  # a sum's terms are taken this many at a time, one running sum per lane (a kernel's narrowest block)
aten = torch.ops.aten
SUMS = {aten.sum.dim_IntList, aten.sum.default, aten.mean.dim, aten.mean.default}
PRODUCTS = {aten.mm.default, aten.bmm.default, aten.addmm.default, aten.baddbmm.default}
KEEP_WHOLE = SUMS | PRODUCTS | {aten.convolution.default, aten.cumsum.default}
EXACT = {aten.clone.default, aten.detach.default, aten._to_copy.default, aten.copy_.default}  # no rounding in them


def rounding_noise(
    run: Callable[[], list], exact: list, unit: float = FP32_UNIT_ROUNDOFF, samples: int = SAMPLES, seed: int = 0
) -> list[Noise | None] | None:
    """Per output leaf of `exact` (what `run`, a float64 forward flattened to a list, returned undisturbed), its
    rounding noise: the largest change over `samples` disturbed runs (None for a leaf that is not floating-point);
    None where the disturbed runs return something else. `unit` is the unit roundoff of the task's results (2^-8
    for a bfloat16 task, 2^-11 for float16); sums accumulate in fp32 whatever it is, as kernels do."""
    mode = Rounding(unit, seed)
    largest = [0.0 if _floating(x) else None for x in exact]
    for _ in range(samples):
        with mode:
            disturbed = run()
        if len(disturbed) != len(exact):
            return None
        for index, (x, y) in enumerate(zip(exact, disturbed)):
            if largest[index] is None:
                continue
            if not _floating(y) or y.shape != x.shape:
                return None
            change = (y - x).abs().nan_to_num(0.0, 0.0, 0.0)
            largest[index] = max(largest[index], float(change.max()) if change.numel() else 0.0)
        del disturbed
    return [None if value is None else Noise(value, mode.products) for value in largest]


class Rounding(TorchDispatchMode):
    """Inside it, float64 operations come out as if their results were rounded at `unit` and their sums
    accumulated in fp32 (see the module's docstring)."""

    def __init__(self, unit: float, seed: int):
        super().__init__()
        self.unit = unit
        self.seed = seed
        self.generators: dict[torch.device, torch.Generator] = {}
        self.products = False  # a matrix product or a convolution ran

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in SUMS:
            return self._sum(func, args, kwargs)
        if func in PRODUCTS or func is aten.convolution.default:
            return self._product(func, args, kwargs)
        if func is aten.cumsum.default:
            return self._cumsum(args, kwargs)
        if func in decomposition_table and func not in KEEP_WHOLE:
            with self:
                return decomposition_table[func](*args, **kwargs)
        if func in EXACT or getattr(func, "is_view", False):  # moving or viewing values rounds nothing
            return func(*args, **kwargs)
        return tree_map(self._round, func(*args, **kwargs))

    def _round(self, value: object) -> object:
        if not _floating(value):
            return value
        delta = torch.rand(value.shape, generator=self._generator(value.device), dtype=value.dtype, device=value.device)
        return value * (1.0 + self.unit * (2.0 * delta - 1.0))

    def _generator(self, device: torch.device) -> torch.Generator:
        if device not in self.generators:
            self.generators[device] = torch.Generator(device=device).manual_seed(self.seed)
        return self.generators[device]

    def _normal(self, like: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        draw = torch.randn(like.shape, generator=self._generator(like.device), dtype=like.dtype, device=like.device)
        return like + FP32_UNIT_ROUNDOFF * scale * draw

    def _sum(self, func, args, kwargs) -> torch.Tensor:
        terms = args[0]
        out = func(*args, **kwargs)
        if not _floating(terms) or not terms.dim():
            return self._round(out)
        dims = _reduced_dims(terms, args[1] if len(args) > 1 else kwargs.get("dim"))
        keep = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
        moved = terms.movedim(dims, list(range(terms.dim() - len(dims), terms.dim())))
        flat = moved.reshape(*moved.shape[: terms.dim() - len(dims)], -1)
        count = flat.shape[-1]
        lanes = torch.nn.functional.pad(flat, (0, -count % LANES)).unflatten(-1, (-1, LANES))
        partial = lanes.cumsum(-2)  # each lane's running sum
        if func in (aten.mean.dim, aten.mean.default):
            partial = partial / max(1, count)
        spread = partial.square().sum((-2, -1)).sqrt()
        if keep:
            for dim in sorted(dims):
                spread = spread.unsqueeze(dim)
        return self._round(self._normal(out, spread.reshape(out.shape)))

    def _cumsum(self, args, kwargs) -> torch.Tensor:
        out = aten.cumsum.default(*args, **kwargs)
        if not _floating(out):
            return out
        dim = args[1] if len(args) > 1 else kwargs["dim"]
        spread = out.square().cumsum(dim).sqrt()  # the partial sums of output k are outputs 1..k
        return self._round(self._normal(out, spread))

    def _product(self, func, args, kwargs) -> torch.Tensor:
        out = func(*args, **kwargs)
        if not _floating(out):
            return out
        self.products = True
        if func is aten.convolution.default:
            x, w = args[0], args[1]
            squares = aten.convolution.default(x.square(), w.square(), None, *args[3:])
            terms = w[0].numel()
        else:
            a, b = (args[0], args[1]) if func in (aten.mm.default, aten.bmm.default) else (args[1], args[2])
            squares = torch.matmul(a.square(), b.square())
            terms = a.shape[-1]
        spread = (terms * squares).sqrt()
        return self._round(self._normal(out, spread.expand_as(out)))


def _reduced_dims(terms: torch.Tensor, dims: object) -> list[int]:
    if dims is None or dims == []:
        return list(range(terms.dim()))
    if isinstance(dims, int):
        dims = [dims]
    return sorted(d % terms.dim() for d in dims)


def _floating(value: object) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()
