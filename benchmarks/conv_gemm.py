"""The project's implicit-GEMM convolution against cuDNN in fp32, at the sizes of KernelBench's convolutions.

For each convolution (channels first and channels last, the layout Inductor's default compile hands cuDNN), it
times cuDNN with TF32 off (what the verifier's baselines run) and the kernel of `model_server/inductor/conv_gemm.py`
at each tile and precision, checks each output against a float64 convolution of the first images, and prints a
table: milliseconds, the ratio to cuDNN, the max error. Needs a GPU.

    python benchmarks/conv_gemm.py [--only NAME ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
import triton.testing

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from model_server.inductor.conv_gemm import ConvSpec, grid, kernel_source

# name: (input size, out channels, kernel, stride, padding, dilation, groups)
CONVOLUTIONS = {
    "kb-l1-55": ((8, 64, 512, 1024), 128, 3, 1, 0, 1, 1),
    "kb-l2-31": ((128, 64, 128, 128), 128, 3, 1, 0, 1, 1),
    "kb-l2-54": ((64, 64, 256, 256), 64, 3, 1, 0, 1, 1),
    "kb-l2-43-3d": ((4, 32, 32, 128, 128), 64, 3, 1, 1, 1, 1),
    "kb-l2-82": ((128, 8, 256, 256), 64, 3, 1, 0, 1, 1),
    "kb-l2-90-3d": ((128, 8, 16, 64, 64), 64, 3, 1, 0, 1, 1),
    "kb-l1-50-alexnet": ((256, 3, 224, 224), 96, 11, 4, 2, 1, 1),
    "published-conv2d": ((16, 16, 1024, 1024), 128, 3, 1, 0, 1, 1),
}
TILES = [
    ("tf32x3", {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8, "num_stages": 3}),
    ("tf32x3", {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 4}),
    ("tf32x3", {"BLOCK_M": 256, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 8, "num_stages": 3}),
    ("tf32x3", {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 4, "num_stages": 4}),
    ("tf32x3", {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 16, "num_warps": 8, "num_stages": 4}),
    ("ieee", {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 4, "num_stages": 4}),
    ("ieee", {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 16, "num_warps": 4, "num_stages": 3}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="names of the convolutions to run (default: all)")
    parser.add_argument("--json", type=Path, help="write every measurement here")
    args = parser.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    folder = Path(tempfile.mkdtemp(prefix="conv-gemm-"))
    for name, conv in CONVOLUTIONS.items():
        if args.only and name not in args.only:
            continue
        for channels_last in (False, True):
            rows += measure(name, conv, channels_last, folder)
            torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


def measure(name: str, conv: tuple, channels_last: bool, folder: Path) -> list[dict]:
    size, out_channels, kernel, stride, padding, dilation, groups = conv
    dims = len(size) - 2
    torch.manual_seed(0)
    x = torch.randn(size, device="cuda")
    w = torch.randn(out_channels, size[1] // groups, *[kernel] * dims, device="cuda") / (size[1] * kernel**dims) ** 0.5
    if channels_last:
        layout = torch.channels_last if dims == 2 else torch.channels_last_3d
        x, w = x.to(memory_format=layout), w.to(memory_format=layout)
    conv_fn = getattr(F, f"conv{dims}d")
    library = conv_fn(x, w, None, stride, padding, dilation, groups)
    exact = conv_fn(x[:2].double(), w.double(), None, stride, padding, dilation, groups)
    layout_name = "channels last" if channels_last else "channels first"
    cudnn_ms = triton.testing.do_bench(lambda: conv_fn(x, w, None, stride, padding, dilation, groups), rep=200)
    rows = [
        {"conv": name, "layout": layout_name, "what": "cuDNN fp32", "ms": cudnn_ms, "error": _error(library, exact)}
    ]
    print(
        f"{name:18} {layout_name:15} {'cuDNN fp32':44} {cudnn_ms:8.3f} ms  1.00x  err {rows[0]['error']:.1e}",
        flush=True,
    )
    for precision, tile in TILES:
        out = torch.empty_strided(library.shape, library.stride(), device="cuda")
        spec = ConvSpec(
            tuple(x.shape),
            x.stride(),
            tuple(w.shape),
            w.stride(),
            tuple(out.shape),
            out.stride(),
            (stride,) * dims,
            (padding,) * dims,
            (dilation,) * dims,
            groups,
            False,
        )
        blocks = f"{tile['BLOCK_M']}x{tile['BLOCK_N']}x{tile['BLOCK_K']}"
        label = f"ours {precision} {blocks} w{tile['num_warps']} s{tile['num_stages']}"
        try:
            launch = _load(spec, tile, precision, folder)[grid(spec, tile)]
            run = functools.partial(launch, x, w, out, num_warps=tile["num_warps"], num_stages=tile["num_stages"])
            run()
            error = _error(out, exact)
            ms = triton.testing.do_bench(run, rep=200)
        except Exception as exc:  # a tile that does not compile (shared memory) is a row, not the end
            print(f"{name:18} {layout_name:15} {label:44} failed: {str(exc).splitlines()[0][:80]}", flush=True)
            continue
        rows.append({"conv": name, "layout": layout_name, "what": label, "ms": ms, "error": error})
        print(f"{name:18} {layout_name:15} {label:44} {ms:8.3f} ms  {cudnn_ms / ms:.2f}x  err {error:.1e}", flush=True)
    return rows


def _load(spec: ConvSpec, tile: dict, precision: str, folder: Path):
    source = "import triton\nimport triton.language as tl\n\n\n" + kernel_source("conv_kernel", spec, tile, precision)
    path = folder / f"k{abs(hash(source))}.py"
    path.write_text(source)
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.conv_kernel


def _error(out: torch.Tensor, exact: torch.Tensor) -> float:
    return (out[: exact.shape[0]].double() - exact).abs().max().item()


if __name__ == "__main__":
    main()
