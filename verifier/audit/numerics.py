"""TRI4xx: numerics. Overflowing exponentials, low-precision accumulators, implicit TF32."""

from __future__ import annotations

import ast

from verifier.audit.collector import Collector
from verifier.audit.dataflow import LOW_PRECISION, KernelFlow, call_name, keyword, location, tagged_locations
from verifier.audit.source_index import Kernel, SourceIndex


def check_kernel(index: SourceIndex, kernel: Kernel, flow: KernelFlow, out: Collector) -> None:
    """Run every TRI4xx rule on one kernel."""
    _unshifted_exp(index, kernel, flow, out)
    for node in kernel.nodes:
        if not isinstance(node, ast.Call):
            continue
        function = index.tl_function(node)
        if function == "zeros":
            _low_precision_accumulator(index, kernel, node, out)
        elif function == "dot":
            _dot_out_dtype(index, node, out)
            _dot_precision(index, flow, node, out)


def _unshifted_exp(index: SourceIndex, kernel: Kernel, flow: KernelFlow, out: Collector) -> None:
    exps = {location(n): n for n in kernel.nodes if isinstance(n, ast.Call) and index.tl_function(n)}
    reported: set[str] = set()
    for node in kernel.nodes:
        if not isinstance(node, ast.Call) or call_name(index, node) != "sum":
            continue
        operand = node.args[0] if node.args else (node.func.value if isinstance(node.func, ast.Attribute) else None)
        for key in sorted(tagged_locations(flow.tags(operand), "unshifted_exp") - reported):
            reported.add(key)
            out.add(
                "TRI401",
                exps.get(key, node),
                "exp of loaded values is summed without subtracting the maximum first: exp overflows to inf for "
                "inputs above ~88 (fp32) and the softmax/logsumexp becomes nan. Use exp(x - tl.max(x, axis))",
            )


def _low_precision_accumulator(index: SourceIndex, kernel: Kernel, call: ast.Call, out: Collector) -> None:
    dtype = call.args[1] if len(call.args) > 1 else keyword(call, "dtype")
    if dtype is None or not _is_low_precision(index, dtype):
        return
    names = [name for name, values in kernel.assignments.items() if any(v is call for v in values)]
    for name in names:
        updates = [v for v in kernel.assignments[name] if v is not call]
        if any(isinstance(n, ast.Name) and n.id == name for v in updates for n in index.subtree(v)):
            out.add(
                "TRI402",
                dtype,
                f"accumulator `{name}` is {_dtype_name(index, dtype)}: every update rounds to ~3 significant digits "
                "and long sums drift. Accumulate in tl.float32 and cast once when storing",
                out.replace("Accumulate in float32", dtype, f"{index.tl_alias()}.float32"),
            )
            return


def _dot_out_dtype(index: SourceIndex, call: ast.Call, out: Collector) -> None:
    dtype = keyword(call, "out_dtype")
    if dtype is not None and _is_low_precision(index, dtype):
        out.add(
            "TRI402",
            dtype,
            f"tl.dot with out_dtype={_dtype_name(index, dtype)} accumulates in low precision; use tl.float32 "
            "and cast the result",
            out.replace("Accumulate in float32", dtype, f"{index.tl_alias()}.float32"),
        )


def _dot_precision(index: SourceIndex, flow: KernelFlow, call: ast.Call, out: Collector) -> None:
    if len(call.args) > 3 or keyword(call, "input_precision") is not None or keyword(call, "allow_tf32") is not None:
        return
    if any("low_precision" in flow.tags(arg) for arg in call.args[:2]):
        return
    last = (call.args + [k.value for k in call.keywords])[-1]
    out.add(
        "TRI403",
        call,
        "tl.dot without input_precision uses TF32 for fp32 inputs (about 1e-3 relative error, which fails fp32 "
        'tolerance 1e-4). Say which you want: input_precision="ieee" for exact fp32, "tf32" to accept it',
        out.insert('Use input_precision="ieee"', last.end_lineno, last.end_col_offset, ', input_precision="ieee"'),
        severity="warning" if index.is_candidate() else "info",
    )


def _is_low_precision(index: SourceIndex, dtype: ast.expr) -> bool:
    return (index.resolve(dtype) or "").split(".")[-1] in LOW_PRECISION


def _dtype_name(index: SourceIndex, dtype: ast.expr) -> str:
    return (index.resolve(dtype) or "").split(".")[-1]
