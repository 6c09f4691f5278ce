"""Compile checks with the real Triton compiler for a CUDA target, on this CPU-only machine."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from verifier.audit.compile_check import CompileChecker, shared_memory_limit
from verifier.audit.config import AuditConfig

pytest.importorskip("triton.backends.nvidia.compiler")

ADD = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


    def add(x, y):
        out = torch.empty(x.shape, dtype=torch.float16, device=x.device)
        xh = x.half()
        yh = y.half()
        add_kernel[(triton.cdiv(x.numel(), 1024),)](xh, yh, out, x.numel(), BLOCK=1024, num_warps=8)
        return out
    """
)


@pytest.fixture
def checker(tmp_path: Path) -> CompileChecker:
    return CompileChecker(AuditConfig(), cache_dir=tmp_path / "cache")


def test_a_kernel_with_known_types_compiles_and_reports_its_figures(checker):
    [summary] = checker.findings("add.py", ADD)
    assert summary.rule == "TRI604" and summary.severity == "info"
    assert "sm_90, BLOCK=1024, num_warps=8" in summary.message
    registers = int(summary.message.split(": ")[1].split(" registers")[0])
    assert 0 < registers < 256
    assert summary.line == 8


def test_a_compile_error_maps_to_the_file_line_and_is_an_error_when_nothing_was_assumed(checker):
    broken = ADD.replace("mask = offs < n", "mask = offs < n\n    bad = tl.reshape(offs, (3, 5))")
    [finding] = [f for f in checker.findings("add.py", broken) if f.rule == "TRI601"]
    assert finding.severity == "error"
    assert finding.line == 11 and broken.splitlines()[finding.line - 1].strip().startswith("bad = tl.reshape")
    assert "sm_90" in finding.message


def test_an_error_in_a_jit_helper_points_into_the_helper(checker):
    source = ADD.replace(
        "@triton.jit\ndef add_kernel",
        "@triton.jit\ndef twice(v):\n    return v * undefined_name\n\n\n@triton.jit\ndef add_kernel",
    ).replace("+ tl.load(y_ptr + offs, mask=mask)", "+ twice(tl.load(y_ptr + offs, mask=mask))")
    [finding] = [f for f in checker.findings("add.py", source) if f.rule == "TRI601"]
    assert source.splitlines()[finding.line - 1].strip() == "return v * undefined_name"


def test_guessed_types_turn_a_compile_failure_into_info_that_names_the_guess(checker):
    source = ADD.replace("xh = x.half()", "xh = x").replace(
        "mask = offs < n", "mask = offs < n\n    bad = tl.reshape(offs, (3, 5))"
    )
    findings = checker.findings("add.py", source)
    [finding] = [f for f in findings if f.rule == "TRI601"]
    assert finding.severity == "info" and "assuming x_ptr: *fp32" in finding.message


def test_example_inputs_in_the_same_file_give_the_pointer_dtype(checker):
    source = ADD.replace("xh = x.half()", "xh = x").replace("yh = y.half()", "yh = y")
    source = source.replace("dtype=torch.float16", "dtype=x.dtype")
    inputs = "[torch.randn(4096, dtype=torch.float16), torch.rand(4096, dtype=torch.float16)]"
    source += f"\n\ndef get_inputs():\n    return {inputs}\n"
    broken = source.replace("mask = offs < n", "mask = offs < n\n    bad = tl.reshape(offs, (3, 5))")
    [finding] = [f for f in checker.findings("add.py", broken) if f.rule == "TRI601"]
    assert finding.severity == "error", finding.message
    mixed = broken.replace("torch.rand(4096, dtype=torch.float16)", "torch.randint(0, 9, (4096,))")
    [finding] = [f for f in checker.findings("add.py", mixed) if f.rule == "TRI601"]
    assert finding.severity == "info" and "assuming x_ptr: *fp32" in finding.message


def test_shared_memory_over_the_targets_limit_is_an_error(tmp_path):
    big = textwrap.dedent(
        """
        import triton
        import triton.language as tl


        @triton.jit
        def mm(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
            rm = tl.arange(0, BM)
            rn = tl.arange(0, BN)
            rk = tl.arange(0, BK)
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for k in range(0, 4):
                a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :] + k)
                b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :] + k)
                acc += tl.dot(a, b)
            tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc.to(tl.float16))


        def launch(a, b, c):
            mm[(1,)](a.half(), b.half(), c.half(), BM=256, BN=256, BK=128, num_warps=8, num_stages=4)
        """
    )
    checker = CompileChecker(AuditConfig(target="sm_80"), cache_dir=tmp_path)
    findings = checker.findings("mm.py", big)
    [over] = [f for f in findings if f.rule == "TRI603"]
    assert over.severity == "info"  # the pointers are `.half()` of names: their dtype is a guess
    shared = int(next(f for f in findings if f.rule == "TRI604").message.split(" spilled, ")[1].split(" bytes")[0])
    assert shared > shared_memory_limit(80) == 166912


def test_register_spills_are_a_warning_with_the_spilled_bytes(checker):
    spilling = textwrap.dedent(
        """
        import triton
        import triton.language as tl


        @triton.jit
        def spill(x_ptr, out_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs)
            w = tl.load(out_ptr + offs)
            acc = x * w
            for i in range(8):
                acc = acc * x + w
            tl.store(out_ptr + offs, acc + tl.sum(x * w, 0))


        def launch(x, out):
            spill[(1,)](x, out, BLOCK=8192, num_warps=1)
        """
    )
    [finding] = [f for f in checker.findings("spill.py", spilling) if f.rule == "TRI602"]
    assert finding.severity == "warning" and "bytes stored" in finding.message and finding.line == 7
    small = spilling.replace("BLOCK=8192, num_warps=1", "BLOCK=256, num_warps=4")
    assert [f.rule for f in checker.findings("spill.py", small)] == ["TRI604"]


def test_results_are_cached_on_disk_by_source_hash(tmp_path):
    first = CompileChecker(AuditConfig(), cache_dir=tmp_path)
    assert first.findings("add.py", ADD)
    cached = list(tmp_path.glob("*.json"))
    assert len(cached) == 1
    cached[0].write_text(re.sub(r'"registers": \d+', '"registers": 12345', cached[0].read_text()))
    assert "12345 registers" in CompileChecker(AuditConfig(), cache_dir=tmp_path).findings("add.py", ADD)[0].message
    cached[0].write_text("{not json")
    recompiled = CompileChecker(AuditConfig(), cache_dir=tmp_path).findings("add.py", ADD)
    assert "12345" not in recompiled[0].message and " registers" in recompiled[0].message
    changed = ADD.replace("num_warps=8", "num_warps=4")
    CompileChecker(AuditConfig(), cache_dir=tmp_path).findings("add.py", changed)
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_files_without_knowable_signatures_are_not_compiled(checker):
    source = ADD.replace("BLOCK=1024, num_warps=8", "BLOCK=pick(x), num_warps=8")
    assert checker.findings("add.py", source) == []


def test_shared_memory_limits_follow_the_architecture():
    assert shared_memory_limit(90) == 232448 and shared_memory_limit(89) == 101376 and shared_memory_limit(61) == 49152


@pytest.mark.gpu
def test_figures_match_what_the_driver_reports_for_the_same_kernel_on_a_real_gpu(tmp_path):
    import importlib.util

    import torch

    major, minor = torch.cuda.get_device_capability()
    module_file = tmp_path / "gpu_add.py"
    module_file.write_text(ADD)
    spec = importlib.util.spec_from_file_location("gpu_add", module_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = torch.randn(4099, device="cuda")  # not a multiple of 16, so `n` is not specialised at launch
    assert torch.allclose(module.add(x, x).float(), (x.half() + x.half()).float())
    [compiled] = [k for cache in module.add_kernel.device_caches.values() for k in cache[0].values()]
    compiled._init_handles()
    checker = CompileChecker(AuditConfig(target=f"sm_{major}{minor}"), cache_dir=tmp_path / "cache")
    [summary] = checker.findings(str(module_file), ADD)
    assert f"{compiled.n_regs} registers" in summary.message
    assert f"{compiled.metadata.shared} bytes shared" in summary.message


def test_a_reduce_combine_function_compiles_with_its_kernel_not_alone(checker):
    source = textwrap.dedent(
        """
        import triton
        import triton.language as tl


        @triton.jit
        def combine(a, b):
            return a + b


        @triton.jit
        def total(x_ptr, out_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(out_ptr, tl.reduce(tl.load(x_ptr + offs), 0, combine))


        def launch(x, out):
            total[(1,)](x, out, BLOCK=128)
        """
    )
    findings = checker.findings("reduce.py", source)
    assert not [f for f in findings if "`combine`" in f.message]
    assert [f for f in findings if f.rule == "TRI604" and "`total`" in f.message]


ZOO = Path(__file__).resolve().parents[2] / "fixtures" / "zoo"


@pytest.mark.parametrize("name", ["hang_at_import.py", "memory_bomb.py"])
def test_module_level_code_never_runs_when_kernels_compile(checker, name):
    """A file that loops forever or allocates without bound at import still has its kernel compiled: only
    imports, @jit functions and plain constants are rebuilt in the compiler process."""
    findings = checker.findings(name, (ZOO / name).read_text())
    [summary] = [f for f in findings if f.rule == "TRI604"]
    assert " registers" in summary.message, summary.message


def test_a_compile_that_runs_past_its_time_limit_is_stopped_and_said(tmp_path):
    slow = ADD.replace(
        "mask = offs < n\n",
        "mask = offs < n\n    acc = offs\n    for i in tl.static_range(4000):\n        acc = acc * 3 + i\n",
    ).replace("out_ptr + offs, tl.load", "out_ptr + offs + acc * 0, tl.load")
    checker = CompileChecker(AuditConfig(compile_timeout=1.0), cache_dir=tmp_path)
    [finding] = checker.findings("slow.py", slow)
    assert finding.rule == "TRI604" and finding.severity == "info"
    assert "compiling took longer than 1 s and was stopped" in finding.message


def test_a_helper_from_another_module_is_not_compiled_rather_than_called_broken(checker):
    """The compile child does not import other modules (their top level could do anything), so a kernel that
    calls a @jit helper imported from one is left uncompiled, with the reason, never reported as an error."""
    source = ADD.replace(
        "import triton.language as tl\n", "import triton.language as tl\nfrom mypkg.ops import twice\n"
    )
    source = source.replace("+ tl.load(y_ptr + offs, mask=mask)", "+ twice(tl.load(y_ptr + offs, mask=mask))")
    [finding] = checker.findings("add.py", source)
    assert (finding.rule, finding.severity) == ("TRI604", "info")
    assert "uses `twice`, which comes from code the compile check does not run" in finding.message
