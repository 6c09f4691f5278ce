"""How much Inductor's own tuning knobs gain over its defaults on tasks without a matmul: the question before
the backend spends conversion time on a tuned capture of pointwise, reduction, scan and norm kernels.

    python benchmarks/inductor_tuning.py TASK.py [TASK.py ...] [--json FILE]

Each task (KernelBench format, trusted benchmark input: it runs in this process) is compiled three ways on the
GPU: Inductor's defaults, `coordinate_descent_tuning` (Inductor searches each kernel's block sizes and warps
around its heuristic choice), and that tuning with each of Inductor's other reduction strategies: looped instead of
persistent reductions (a row too long for one block is walked in a loop), no split reductions (one kernel reduces a
whole row, however long), cooperative reductions (the blocks of one row reduce together in one kernel). Prints the
median time of each (`triton.testing.do_bench`), its ratio to the defaults, and the compile seconds. Needs CUDA.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

MODES = {
    "default": {},
    "coordinate descent": {"coordinate_descent_tuning": True},
    "+ looped reductions": {"coordinate_descent_tuning": True, "triton.persistent_reductions": False},
    "+ no split reductions": {"coordinate_descent_tuning": True, "split_reductions": False},
    "+ cooperative reductions": {"coordinate_descent_tuning": True, "triton.cooperative_reductions": True},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="+", type=Path)
    parser.add_argument("--json", type=Path, help="also write every row here")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        parser.error("needs a CUDA GPU")
    rows = []
    print(f"{'task':<44} {'eager ms':>9} " + " ".join(f"{name:>26}" for name in MODES))
    for path in args.tasks:
        row = _measure(path)
        rows.append(row)
        cells = [
            f"{row[name]['ms']:8.3f} {row['default']['ms'] / row[name]['ms']:5.2f}x {row[name]['compile_s']:6.1f}s"
            for name in MODES
        ]
        print(f"{path.stem[:44]:<44} {row['eager_ms']:9.3f} " + " ".join(f"{cell:>26}" for cell in cells), flush=True)
        if args.json:  # after every task, so a run stopped at its time limit keeps what it measured
            args.json.write_text(json.dumps(rows, indent=1))


def _measure(path: Path) -> dict:
    import torch
    from triton.testing import do_bench

    from verifier import load_module, seed_everything

    module = load_module(str(path), path.stem)
    seed_everything(0)
    with torch.device("cuda"):
        model = module.Model(*module.get_init_inputs()).cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    row: dict = {"task": path.stem}
    with torch.no_grad():
        row["eager_ms"] = do_bench(lambda: model(*inputs))
        for name, settings in MODES.items():
            torch._dynamo.reset()
            try:
                row[name] = _compiled_time(model, inputs, settings)
            except Exception as exc:  # a strategy Inductor cannot apply to this task; the others still run
                row[name] = {"ms": float("nan"), "compile_s": float("nan"), "error": f"{type(exc).__name__}: {exc}"}
    return row


def _compiled_time(model, inputs: list, settings: dict) -> dict:
    import torch
    import torch._inductor.config as inductor_config
    from triton.testing import do_bench

    with inductor_config.patch({"fx_graph_cache": False, **settings}):
        compiled = torch.compile(model)
        started = time.perf_counter()
        compiled(*inputs)
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - started
        return {"ms": do_bench(lambda: compiled(*inputs)), "compile_s": round(compile_s, 2)}


if __name__ == "__main__":
    main()
