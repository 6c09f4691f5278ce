"""The project's matmul kernel against cuBLAS in fp32, at the sizes of KernelBench's matmuls.

For each matmul it times cuBLAS with TF32 off (what the verifier's baselines run) and the kernel of
`model_server/inductor/matmul_gemm.py` at each tile and precision (operands whose rows start off 16-byte boundaries
copied into padded rows first, as the rewrite does; the copy is timed), with K split as the rewrite would split it and,
with `--splits`, at other splits too; checks each output's first rows against float64, relative to the products'
magnitude; and prints a table: milliseconds, the ratio to cuBLAS, TFLOP/s, the error. Needs a GPU.

    python benchmarks/matmul_gemm.py [--only NAME ...] [--splits 8 16 ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import torch
import triton.testing

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from model_server.inductor.matmul_gemm import (
    MatmulSpec,
    aligned,
    copy_grid,
    copy_source,
    grid,
    kernel_source,
    padded_stride,
    reduce_grid,
    reduce_source,
    split_of,
    with_padded_copy,
)

# name: (M, N, K)
MATMULS = {
    "kb-l1-6-large-k": (256, 256, 524288),
    "kb-l1-17-shape": (2048, 4096, 8192),
    "kb-l1-7-small-k": (32768, 32768, 64),
    "square-4096": (4096, 4096, 4096),
    "irregular": (4099, 2053, 3001),
}
TILES = [
    ("tf32x3", {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}),
    ("tf32x3", {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 4}),
    ("tf32x3", {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 4}),
    ("tf32x3", {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 4}),
    ("tf32x3", {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 3}),
    ("tf32x3", {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 4}),
    ("ieee", {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 4}),
]
CHECKED_ROWS = 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="names of the matmuls to run (default: all)")
    parser.add_argument("--splits", nargs="*", type=int, default=[], help="also time these K splits")
    parser.add_argument("--json", type=Path, help="write every measurement here")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    folder = Path(tempfile.mkdtemp(prefix="matmul-gemm-"))
    for name, shape in MATMULS.items():
        if args.only and name not in args.only:
            continue
        rows += measure(name, shape, args.splits, folder)
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


def measure(name: str, shape: tuple[int, int, int], splits: list[int], folder: Path) -> list[dict]:
    m, n, k = shape
    torch.manual_seed(0)
    a, b = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
    exact = a[:CHECKED_ROWS].double() @ b.double()
    scale = a[:CHECKED_ROWS].double().abs() @ b.double().abs()
    flops = 2 * m * n * k
    cublas_ms = triton.testing.do_bench(lambda: a @ b, rep=200)
    first = {"matmul": name, "what": "cuBLAS fp32", "ms": cublas_ms, "error": _error(a @ b, exact, scale)}
    _print(first, cublas_ms, flops)
    rows = [first]
    for precision, tile in TILES:
        spec = MatmulSpec(1, m, n, k, (0, *a.stride()), (0, *b.stride()), (0, n, 1))
        chosen = split_of(spec, tile)
        for split in [chosen, *sorted(set(splits) - {chosen})]:
            blocks = f"{tile['BLOCK_M']}x{tile['BLOCK_N']}x{tile['BLOCK_K']}"
            label = f"ours {precision} {blocks} w{tile['num_warps']} s{tile['num_stages']} split {split}"
            label += " (rule)" if split == chosen else ""
            try:
                run = _runner(spec, tile, precision, split, a, b, folder)
                out = run()
                row = {"matmul": name, "what": label, "error": _error(out, exact, scale), "split": split}
                row["ms"] = triton.testing.do_bench(run, rep=200)
            except Exception as exc:  # a tile that does not compile (shared memory) is a row, not the end
                print(f"{name:18} {label:48} failed: {str(exc).splitlines()[0][:80]}", flush=True)
                continue
            rows.append(row)
            _print(row, cublas_ms, flops)
    return rows


def _runner(spec: MatmulSpec, tile: dict, precision: str, split: int, a, b, folder: Path):
    """A function that computes the product with the rendered kernels, as the rewrite launches them (operands whose
    rows start off 16-byte boundaries copied into padded rows first), and returns it."""
    options = {"num_warps": tile["num_warps"], "num_stages": tile["num_stages"]}
    copies = []
    operands = {"a": a, "b": b}
    for key, x in list(operands.items()):
        size, stride = (1, *x.shape), (0, *x.stride())
        if aligned(size, stride):
            continue
        copy = _load(copy_source(f"copy_{key}", size, stride), f"copy_{key}", folder)
        padded = torch.empty_strided(size, padded_stride(size), device="cuda")
        copies.append((copy, copy_grid(size), x, padded))
        spec = with_padded_copy(spec, key)
        operands[key] = padded
    a, b = operands["a"], operands["b"]
    main = _load(kernel_source("mm_kernel", spec, tile, precision, split), "mm_kernel", folder)
    add = _load(reduce_source("add_kernel", spec, split), "add_kernel", folder) if split > 1 else None
    out = torch.empty(spec.m, spec.n, device="cuda")
    work = torch.empty(split, spec.m, spec.n, device="cuda") if split > 1 else None

    def run():
        for copy, copy_launch, source, padded in copies:
            copy[copy_launch](source, padded)
        if add is None:
            main[grid(spec, tile, split)](a, b, out, **options)
        else:
            main[grid(spec, tile, split)](a, b, work, **options)
            add[(reduce_grid(spec),)](work, out)
        return out

    return run


def _load(source: str, name: str, folder: Path):
    source = "import triton\nimport triton.language as tl\n\n\n" + source
    path = folder / f"k{abs(hash(source))}.py"
    path.write_text(source)
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, name)


def _error(out: torch.Tensor, exact: torch.Tensor, scale: torch.Tensor) -> float:
    """The largest error of the first rows relative to the products' magnitude (what fp32 summation errs by)."""
    return ((out[:CHECKED_ROWS].double() - exact).abs() / scale.clamp_min(1e-30)).max().item()


def _print(row: dict, cublas_ms: float, flops: int) -> None:
    tflops = flops / row["ms"] / 1e9
    print(
        f"{row['matmul']:18} {row['what']:48} {row['ms']:8.3f} ms  {cublas_ms / row['ms']:.2f}x  "
        f"{tflops:6.1f} TFLOP/s  err {row['error']:.1e}",
        flush=True,
    )


if __name__ == "__main__":
    main()
