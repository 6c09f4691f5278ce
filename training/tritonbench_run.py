"""Run one TritonBench program (code, separator, test code) inside the verifier's sandbox, and print its results.

    python -m training.tritonbench_run SCRIPT.py --device cpu|cuda

The program runs as `__main__`, its folder first on the import path as `python SCRIPT.py` puts it (a test may import
its own file by name), after a fixed seed (the tests draw unseeded random inputs, so two runs compare only
when both start from the same state). Its own output goes through, then a line `MARKER` and the value of its
`test_results`, rendered as `print` shows it under torch's default print options, with every tensor detached and on
the CPU, so that the rendering says only what the values are. The parent compares that text with the reference's.

On a CPU the tests' 'cuda' tensors are made on the CPU instead (`CudaOnCpu`) and Triton runs in its interpreter:
`TRITON_INTERPRET=1` must be in the environment before Triton is imported, which the parent sees to. On a GPU the
program runs as it is. Nothing here is trusted: the program shares this process, and the parent treats what it
prints as the candidate's.
"""

from __future__ import annotations

import argparse
import os
import random
import runpy
import sys

import torch
from torch.overrides import TorchFunctionMode

MARKER = "=== tritonize: test_results ==="
SEED = 0


class CudaOnCpu(TorchFunctionMode):
    """Every device a torch call is given that names CUDA becomes the CPU: factory functions' `device=`, and
    `Tensor.to(...)` / `Tensor.cuda()`."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.cuda:
            return args[0]
        if "device" in kwargs:
            kwargs["device"] = _on_cpu(kwargs["device"])
        if func is torch.Tensor.to:
            args = tuple(_on_cpu(arg) for arg in args)
        return func(*args, **kwargs)


def _on_cpu(device: object) -> object:
    if isinstance(device, torch.device) and device.type == "cuda":
        return torch.device("cpu")
    if isinstance(device, str) and device.split(":")[0] == "cuda":
        return "cpu"
    if isinstance(device, int) and not isinstance(device, bool):
        return "cpu"  # a CUDA ordinal
    return device


def render(value: object) -> str:
    """`value` as `print` shows it, tensors detached and on the CPU, under torch's default print options."""
    torch.set_printoptions(profile="default", sci_mode=None)
    return str(_plain(value))


def _plain(value: object) -> object:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_plain(item) for item in value)
    return value


def _seed() -> None:
    random.seed(SEED)
    torch.manual_seed(SEED)
    try:
        import numpy
    except ImportError:
        return
    numpy.random.seed(SEED)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("script")
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    args = parser.parse_args(argv)
    sys.argv = [args.script]
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))
    _seed()
    if args.device == "cpu":
        torch.cuda.synchronize = lambda *_, **__: None
        with CudaOnCpu():
            names = runpy.run_path(args.script, run_name="__main__")
    else:
        names = runpy.run_path(args.script, run_name="__main__")
    sys.stdout.flush()
    print(MARKER)
    print(render(names.get("test_results")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
