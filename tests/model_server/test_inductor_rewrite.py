"""Golden tests of the rewrite from Inductor's generated module to a standalone `ModelNew`, without Inductor.

The inputs are real captures (CPU ones from this machine, CUDA ones from a GPU, with and without Inductor's
Triton templates) stored in tests/fixtures/inductor; `python -m tests.model_server.inductor_fixtures` says how
to refresh them. The slow tests in test_inductor_backend.py run the real Inductor end to end.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Collection

import pytest

from model_server.backends import inductor
from model_server.backends.inductor import IEEE_TILE, OWN_MATMUL, OWN_MATMUL_TILES, TEMPLATES_TF32X3, TUNED, _plan
from model_server.inductor.rewrite import GRIDS, Kernel, RewriteError, Variant, _GridSizes, rewrite, uses_library
from tests.model_server.inductor_fixtures import (
    FIXTURES,
    OWN_CONV,
    expected_path,
    fixtures,
    load,
    own_conv_fixtures,
    own_matmul_fixtures,
    rewritten,
)
from tests.model_server.inductor_fixtures import OWN_MATMUL as OWN_MATMUL_VARIANT
from verifier.audit.anti_hacking import check_candidate
from verifier.audit.engine import audit_source
from verifier.rules import HYBRID_ALLOWS, RULES

CASES = fixtures()
RUFF_DEFAULT_RULES = "E4,E7,E9,F"


def _refused(source: str, name: str, allowed: Collection[str] = ()) -> list:
    """The audit's findings that would refuse `source`: a rule that rejects a candidate (but those `allowed`),
    or a language error (TRI1xx)."""
    return [
        f
        for f in audit_source(source, name)
        if (RULES[f.rule].rejects or f.rule.startswith("TRI1")) and f.rule not in allowed
    ]


def _ruff(target: str, source: str | None = None) -> subprocess.CompletedProcess:
    """ruff's default rules over a path, or over `source` given on stdin (`target` "-")."""
    command = [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", RUFF_DEFAULT_RULES]
    return subprocess.run([*command, target], input=source, capture_output=True, text=True)


def test_there_are_captures_from_both_devices_and_refusals():
    names = [path.stem for path in CASES]
    assert any(name.endswith(".cpu") for name in names)
    assert any(".cuda" in name for name in names)
    assert any(expected_path(path, refused=True).exists() for path in CASES)


@pytest.mark.parametrize("path", CASES, ids=lambda path: path.stem)
def test_the_rewrite_of_a_capture_matches_its_expected_output(path):
    text, refused = rewritten(path)
    expected = expected_path(path, refused)
    assert expected.exists(), f"the rewrite {'refused' if refused else 'accepted'} {path.name}, which it did not before"
    assert text == expected.read_text()


@pytest.mark.parametrize("path", own_conv_fixtures(), ids=lambda path: path.stem)
def test_the_own_convolution_rewrite_of_a_capture_matches_its_expected_output(path):
    """Each default capture that hands a convolution to the library, with the project's kernel in its place."""
    text, refused = rewritten(path, OWN_CONV)
    expected = expected_path(path, refused, "own-conv")
    assert expected.exists(), f"the rewrite {'refused' if refused else 'accepted'} {path.name}, which it did not before"
    assert text == expected.read_text()
    if not refused:
        assert "extern_kernels" not in text and "torch.convolution" not in text


@pytest.mark.parametrize("path", own_matmul_fixtures(), ids=lambda path: path.stem)
def test_the_own_matmul_rewrite_of_a_capture_matches_its_expected_output(path):
    """Each default capture that hands a matmul to the library, with the project's kernel in its place."""
    text, refused = rewritten(path, OWN_MATMUL_VARIANT)
    expected = expected_path(path, refused, "own-matmul")
    assert expected.exists(), f"the rewrite {'refused' if refused else 'accepted'} {path.name}, which it did not before"
    assert text == expected.read_text()
    assert not refused and "extern_kernels" not in text and "torch.mm" not in text and "torch.bmm" not in text


def test_the_own_convolution_replaces_every_convolution_thick_enough_for_its_tiles_transposed_ones_too():
    outcomes = {path.name.split(".")[0]: rewritten(path, OWN_CONV) for path in own_conv_fixtures()}
    refused = {name for name, (_, was_refused) in outcomes.items() if was_refused}
    assert refused == {"published_depthwise_conv2d", "published_conv_transpose3d_strided_grouped"}  # 1 and 8 a group
    assert {"published_conv2d", "published_conv1d", "published_pointwise_conv2d", "conv_gemm"} <= set(outcomes)
    assert "Transposed convolution as an implicit GEMM" in outcomes["published_conv_transpose2d"][0]


def test_a_library_convolution_gets_own_kernel_variants_first_with_an_ieee_fallback():
    """The own kernel's first tile and the hybrid lead (both can go before the templates compile ends), the second
    tile follows, then the conv templates; both tf32x3 tiles fall back to the IEEE one, verified last."""
    default = load(FIXTURES / "published_conv2d_relu_bias_add.cuda.json")[0]
    templates = load(FIXTURES / "published_conv2d_relu_bias_add.cuda-templates.json")[0]
    plan = _plan({"default": default, "templates": templates})
    own = [p for p in plan if p.variant.conv]
    assert [p.variant.conv["precision"] for p in own] == ["tf32x3", "tf32x3", "ieee"]
    assert plan[0] is own[0] and plan[1].variant.hybrid and plan[2] is own[1] and plan[-1] is own[2]
    assert own[0].fallback == own[1].fallback == own[2].variant.label
    assert [p.variant.label for p in plan[3:5]] == [TEMPLATES_TF32X3, "Inductor max-autotune Triton templates"]


@pytest.mark.parametrize("path", [p for p in CASES if expected_path(p, refused=False).exists()], ids=lambda p: p.stem)
def test_every_expected_candidate_parses_and_passes_the_anti_hacking_rules(path):
    source = expected_path(path, refused=False).read_text()
    ast.parse(source)
    assert _refused(source, path.name) == []


@pytest.mark.parametrize("path", [p for p in CASES if expected_path(p, refused=False).exists()], ids=lambda p: p.stem)
def test_every_expected_candidate_is_clean_under_ruffs_default_rules(path):
    done = _ruff("-", expected_path(path, refused=False).read_text())
    assert done.returncode == 0, done.stdout


PUBLISHED = sorted(FIXTURES.glob("published_*.cuda.json"))


def test_every_published_task_has_its_gpu_captures():
    """benchmarks/tasks/published/ captured on a GPU as the backend captures them (`inductor_fixtures capture
    --device cuda --as-backend`): the variant test below covers every task."""
    tasks = sorted(path.stem for path in (FIXTURES.parents[2] / "benchmarks" / "tasks" / "published").glob("*.py"))
    assert [path.name.split(".")[0].removeprefix("published_") for path in PUBLISHED] == tasks


@pytest.mark.parametrize("path", PUBLISHED, ids=lambda path: path.stem)
def test_every_variant_of_a_published_task_passes_the_audit_and_ruff(path, tmp_path):
    """Every candidate the backend would offer for the task (`_plan` over its real GPU captures, each variant
    rewritten): it parses, no rule that rejects a candidate or names a language error fires, and ruff's default
    rules pass (a hybrid variant may compute in PyTorch: what the `hybrid` policy allows)."""
    captures = {"default": load(path)[0]}
    for mode in ("templates", "tuned"):
        extra = path.with_name(path.name.replace(".cuda.json", f".cuda-{mode}.json"))
        if extra.exists():
            captures[mode] = load(extra)[0]
    _, task, name = load(path)
    written = []
    for planned in _plan(captures):
        try:
            source = rewrite(captures[planned.mode], task, name, planned.variant)
        except RewriteError:
            continue
        findings = _refused(source, "candidate.py", HYBRID_ALLOWS if planned.variant.hybrid else ())
        assert findings == [], (planned.variant.label, findings)
        written.append(tmp_path / f"variant_{len(written)}.py")
        written[-1].write_text(source)
    assert written, "no variant of this task rewrites"
    done = _ruff(str(tmp_path))
    assert done.returncode == 0, done.stdout


def _cuda_matmul() -> dict[str, dict]:
    default, _, _ = load(FIXTURES / "matmul_gelu.cuda.json")
    templates, _, _ = load(FIXTURES / "matmul_gelu.cuda-templates.json")
    return {"default": default, "templates": templates}


def test_a_gpu_matmul_gets_distinct_labelled_variants_with_fallbacks():
    """The templates are captured with one configuration (not autotuned): the variants set the tiles, and the
    template as Inductor made it comes last, as the IEEE variant's own fallback. The default capture with the
    project's matmul kernel in place of cuBLAS's ranks second, before the hybrid, and falls back to its IEEE
    variant."""
    plan = _plan(_cuda_matmul())
    labels = [p.variant.label for p in plan]
    assert len(set(labels)) == len(labels) == 9
    own = f"{OWN_MATMUL}, tf32x3, BLOCK 128x64x32, 4 warps, 4 stages"
    own_ieee = f"{OWN_MATMUL}, IEEE fp32, BLOCK 64x128x32, 4 warps, 4 stages"
    assert labels[:4] == [
        "Inductor max-autotune template, tf32x3, BLOCK 128x128x32, 8 warps, 3 stages",
        own,
        "Inductor's default: library call + fused Triton",
        "Inductor max-autotune template, tf32x3, BLOCK 128x64x32, 4 warps, 4 stages",
    ]
    assert plan[2].variant.hybrid and plan[1].mode == "default" and plan[1].variant.matmul == OWN_MATMUL_TILES[0]
    ieee = "Inductor max-autotune template, IEEE fp32, BLOCK 64x128x32, 4 warps, 4 stages"
    as_captured = "Inductor max-autotune template, IEEE fp32, BLOCK 64x128x32, 8 warps, 4 stages"
    assert labels[4] == ieee and labels[7] == as_captured and labels[8] == own_ieee
    assert all(p.fallback == ieee for p in plan if p.variant.precision == "tf32x3")
    assert all(p.fallback == own_ieee for p in plan if p.variant.matmul and p.variant.matmul["precision"] == "tf32x3")
    assert plan[4].fallback == as_captured and plan[4].variant.tile == IEEE_TILE


def test_a_gpu_convolution_template_gets_a_tf32x3_variant_that_falls_back_to_ieee():
    """A convolution template keeps the configuration Inductor's autotuner chose (no tile to set); its dots run at
    tf32x3 first (three TF32 tensor-core products: fp32-accurate), with the template as made as the fallback."""
    default, task, _ = load(FIXTURES / "published_conv_transpose2d.cuda.json")
    templates = load(FIXTURES / "published_conv_transpose2d.cuda-templates.json")[0]
    plan = [p for p in _plan({"default": default, "templates": templates}) if p.mode == "templates"]
    assert [(p.variant.label, p.variant.precision, p.fallback) for p in plan] == [
        (TEMPLATES_TF32X3, "tf32x3", "Inductor max-autotune Triton templates"),
        ("Inductor max-autotune Triton templates", None, None),
    ]
    source = rewrite(templates, task, "conv_transpose2d", plan[0].variant)
    assert "input_precision='tf32x3'" in source and "allow_tf32" not in source


def test_a_templates_capture_the_rewrite_cannot_read_is_one_refused_variant_not_a_failed_conversion():
    """A launch grid the rewrite does not know (Inductor's combo kernels, for a cat of many inputs) once made the
    planning raise, which ended the whole conversion; now the templates variant is refused with the reason and the
    hybrid is still offered."""
    captures = _cuda_matmul()
    templates = captures["templates"]
    wrapper = templates["wrapper"].replace("'grid_type': 'FixedGrid'", "'grid_type': 'SequentialComboKernelGrid'")
    captures["templates"] = {**templates, "wrapper": wrapper}
    plan = _plan(captures)
    modes = [(p.mode, p.variant.hybrid, p.variant.matmul is not None) for p in plan]
    assert (
        modes
        == [("templates", False, False), ("default", False, True), ("default", True, False)]
        + [("default", False, True)] * 2
    )
    with pytest.raises(RewriteError, match="SequentialComboKernelGrid launch grid, which is not supported"):
        rewrite(captures["templates"], "", "task", plan[0].variant)


def test_the_ieee_variant_is_the_captured_template_itself_when_it_has_the_ieee_tile(monkeypatch):
    captures = _cuda_matmul()
    monkeypatch.setattr(inductor, "IEEE_TILE", {**IEEE_TILE, "num_warps": 8})  # the fixture template's tile
    plan = _plan(captures)
    ieee = [p for p in plan if p.mode == "templates" and p.variant.precision is None]
    assert [(p.variant.label, p.variant.tile, p.fallback) for p in ieee] == [
        ("Inductor max-autotune template, IEEE fp32, BLOCK 64x128x32, 8 warps, 4 stages", None, None)
    ]


def test_tf32x3_and_a_retuned_tile_rewrite_the_template():
    captures = _cuda_matmul()
    task = load(FIXTURES / "matmul_gelu.cuda.json")[1]
    tile = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}
    source = rewrite(captures["templates"], task, "matmul_gelu", Variant("retuned", "tf32x3", tile))
    assert "input_precision='tf32x3'" in source and "allow_tf32" not in source
    assert "BLOCK_M: tl.constexpr = 128" in source and "BLOCK_N: tl.constexpr = 128" in source
    assert "[(256, 1, 1,)](x, y, buf1, num_warps=8, num_stages=3)" in source, "2048x2048 in 128x128 tiles"
    assert source.startswith('"""Triton kernels for `matmul_gelu`: retuned.')


def test_a_tile_whose_block_k_does_not_divide_k_is_refused():
    captures = _cuda_matmul()
    task = load(FIXTURES / "matmul_gelu.cuda.json")[1]
    tile = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 4096, "GROUP_M": 8, "num_warps": 4, "num_stages": 3}
    with pytest.raises(RewriteError, match="BLOCK_K 4096 does not divide the template's K of 2048"):
        rewrite(captures["templates"], task, "matmul_gelu", Variant("K past the loads", tile=tile))
    with pytest.raises(RewriteError, match="BLOCK_K 96 is not a power of two"):
        rewrite(captures["templates"], task, "matmul_gelu", Variant("odd K", tile={**tile, "BLOCK_K": 96}))


def test_a_hybrid_variant_keeps_the_library_call_without_autograd():
    captures = _cuda_matmul()
    task = load(FIXTURES / "matmul_gelu.cuda.json")[1]
    source = rewrite(captures["default"], task, "matmul_gelu", Variant("hybrid", hybrid=True))
    assert "with torch.no_grad():\n            torch.mm(x, y, out=buf0)" in source
    assert "a library call and Triton kernels compute" in source


@pytest.mark.parametrize(("ynumel", "expected"), [(8 * 65535, ["4", "65535", "1"]), (8 * 65536, ["4", "32768", "2"])])
def test_the_y_overflow_grid_spills_into_z_as_inductor_launches_it(ynumel, expected):
    kernel = Kernel("k", "k", ast.parse("def k(a, ynumel, xnumel): pass").body[0], "Grid2DWithYZOverflow", {})
    sizes = _GridSizes(kernel, ["a", str(ynumel), "1000"], {"XBLOCK": 256, "YBLOCK": 8})
    assert GRIDS["Grid2DWithYZOverflow"](sizes) == expected


def test_a_subgraph_inductor_calls_is_inlined_into_the_hybrid():
    """Inductor's split-K matrix-vector product on the H100 (its autotuner's `decompose_k` choice): a subgraph
    called with a list of buffers, holding a batched cuBLAS product with `out_dtype` and two Triton reductions."""
    capture, task, name = load(FIXTURES / "published_matvec.cuda-templates.json")
    assert uses_library(capture)  # the library call is inside the subgraph, not in `call` itself
    source = rewrite(capture, task, name, Variant("hybrid", hybrid=True))
    assert (
        "torch.bmm(A.as_strided((256, 2048, 4096), (4096, 1048576, 1), A.storage_offset()), "
        "B.as_strided((256, 4096, 1), (4096, 1, 1), B.storage_offset()), out=sub0_buf0)"
    ) in source
    assert "mm_kernel_0[(256,)](sub0_buf0, sub0_buf1, 4096, 128," in source
    assert "mm_kernel_1[(16,)](sub0_buf1, sub0_buf2, 2048, 2," in source
    assert "out_dtype" not in source and "decompose_k" not in source and "args" not in source
    rejected = [f.rule for f in check_candidate(source) if RULES[f.rule].rejects and f.rule != "TRI302"]
    assert rejected == []  # the hybrid policy lifts TRI302 (library compute) and nothing else
    done = _ruff("-", source)
    assert done.returncode == 0, done.stdout


def test_the_tuned_kernels_are_a_candidate_only_where_the_tuning_changed_a_configuration():
    """Real GPU captures of cross-entropy, default and coordinate-descent tuned: the tuned kernels come first and
    the default ones stay as the other candidate; a tuned capture that changed nothing, or failed, adds none."""
    default = load(FIXTURES / "published_cross_entropy.cuda.json")[0]
    tuned = load(FIXTURES / "published_cross_entropy.cuda-tuned.json")[0]
    assert tuned["configs"] != default["configs"]
    labels = [p.variant.label for p in _plan({"default": default, "tuned": tuned})]
    assert labels == [TUNED, "Inductor's default kernels"]
    unchanged = {**tuned, "configs": default["configs"]}
    failed = {"error": "Inductor's tuned compile failed: late"}
    for other in (unchanged, failed):
        assert [p.variant.label for p in _plan({"default": default, "tuned": other})] == ["Inductor's default kernels"]


def test_a_capture_s_recorded_values_become_guards_and_never_code():
    """The constructor's arguments and read attributes a capture records are pasted into ModelNew as guards, but
    only as plain names and literals: a record that holds code (the capture ran the task's code) is left out."""
    captured, source, name = load(FIXTURES / "published_conv2d_relu_bias_add.cuda-templates.json")
    captured["init_arguments"] = {
        "in_channels": "3",
        "out_channels": "__import__('os').system('touch /tmp/pwned')",
        "kernel_size": "(3,)",
        "bias_shape": None,  # no literal: not checked
    }
    captured["attributes"] = {"scale": "torch.float32", "x) or (1": "1", "shift": "float('inf')"}
    module = rewrite(captured, source, name)
    tree = ast.parse(module)
    assert "__import__" not in module and "x) or (1" not in module
    init = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    assert ast.unparse(init.body[0].test) == "(in_channels, kernel_size) != (3, (3,))"
    forward = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "forward")
    guards = [ast.unparse(s.test) for s in forward.body if isinstance(s, ast.If)]
    assert "(self.scale, self.shift) != (torch.float32, float('inf'))" in guards, guards
