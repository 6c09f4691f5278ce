"""The project's implicit-GEMM convolution against cuDNN in fp32, at the sizes of KernelBench's convolutions.

For each convolution (channels first and channels last, the layout Inductor's default compile hands cuDNN), it
times cuDNN with TF32 off (what the verifier's baselines run) and the kernel of `model_server/inductor/conv_gemm.py`
(`conv_transpose_gemm.py` for a transposed one) at each tile and precision, checks each output against a float64
convolution of the first images, and prints a table: milliseconds, the ratio to cuDNN, the max error. Needs a GPU.

    python benchmarks/conv_gemm.py [--only NAME ...] [--layouts first last] [--json OUT]
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
from model_server.inductor import conv_gemm, conv_transpose_gemm
from model_server.inductor.conv_gemm import ConvSpec

# name: (input size, out channels, kernel, stride, padding, dilation, groups[, output padding if transposed])
CONVOLUTIONS = {
    "kb-l1-55": ((8, 64, 512, 1024), 128, 3, 1, 0, 1, 1),
    "kb-l2-31": ((128, 64, 128, 128), 128, 3, 1, 0, 1, 1),
    "kb-l2-54": ((64, 64, 256, 256), 64, 3, 1, 0, 1, 1),
    "kb-l2-43-3d": ((4, 32, 32, 128, 128), 64, 3, 1, 1, 1, 1),
    "kb-l2-82": ((128, 8, 256, 256), 64, 3, 1, 0, 1, 1),
    "kb-l2-90-3d": ((128, 8, 16, 64, 64), 64, 3, 1, 0, 1, 1),
    "kb-l1-50-alexnet": ((256, 3, 224, 224), 96, 11, 4, 2, 1, 1),
    "published-conv2d": ((16, 16, 1024, 1024), 128, 3, 1, 0, 1, 1),
    "kb-l2-100-transposed-3d": ((16, 64, 24, 48, 48), 128, 3, 2, 1, 1, 1, 0),
    "kb-l1-57-transposed": ((8, 64, 1024, 1024), 64, 3, 1, 0, 1, 1, 0),
    "kb-l1-64-transposed-1d": ((64, 128, 65536), 128, 3, 1, 0, 1, 1, 0),
    "kb-l1-61-transposed-3d": ((8, 48, 64, 64, 64), 48, 3, 1, 0, 1, 1, 0),
    "kb-l1-73-transposed-3d-grouped": ((4, 32, 32, 64, 128), 32, 3, 2, 1, 1, 4, 0),
    "kb-l1-77-transposed-3d-dilated": ((16, 32, 16, 32, 32), 64, 3, 2, 1, 2, 1, 0),
    "kb-l1-74-transposed-1d-dilated": ((32, 32, 131072), 64, 5, 1, 0, 3, 1, 0),
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
    parser.add_argument(
        "--layouts", nargs="+", choices=["first", "last"], default=["first", "last"], help="channels first or last"
    )
    parser.add_argument("--json", type=Path, help="write every measurement here")
    args = parser.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    folder = Path(tempfile.mkdtemp(prefix="conv-gemm-"))
    for name, conv in CONVOLUTIONS.items():
        if args.only and name not in args.only:
            continue
        for layout in args.layouts:
            rows += measure(name, conv, layout == "last", folder)
            torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


def measure(name: str, conv: tuple, channels_last: bool, folder: Path) -> list[dict]:
    size, out_channels, kernel, stride, padding, dilation, groups = conv[:7]
    transposed, output_padding = len(conv) == 8, conv[7:] or (0,)
    dims = len(size) - 2
    torch.manual_seed(0)
    x = torch.randn(size, device="cuda")
    channels = (size[1], out_channels // groups) if transposed else (out_channels, size[1] // groups)
    w = torch.randn(*channels, *[kernel] * dims, device="cuda") / (size[1] * kernel**dims) ** 0.5
    if channels_last:
        layout = torch.channels_last if dims == 2 else torch.channels_last_3d
        x, w = (x, w) if dims == 1 else (x.to(memory_format=layout), w.to(memory_format=layout))
    if transposed:
        conv_fn = functools.partial(_transposed, getattr(F, f"conv_transpose{dims}d"), output_padding[0])
    else:
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
    renderer = conv_transpose_gemm if transposed else conv_gemm
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
            transposed,
        )
        blocks = f"{tile['BLOCK_M']}x{tile['BLOCK_N']}x{tile['BLOCK_K']}"
        label = f"ours {precision} {blocks} w{tile['num_warps']} s{tile['num_stages']}"
        try:
            launch = _load(renderer, spec, tile, precision, folder)[renderer.grid(spec, tile)]
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


def _transposed(conv_transpose, output_padding, x, w, bias, stride, padding, dilation, groups):
    """A transposed convolution called as a forward one is (their arguments come in another order)."""
    return conv_transpose(x, w, bias, stride, padding, output_padding, groups, dilation)


def _load(renderer, spec: ConvSpec, tile: dict, precision: str, folder: Path):
    source = "import triton\nimport triton.language as tl\n\n\n"
    source += renderer.kernel_source("conv_kernel", spec, tile, precision)
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
