"""The two policies: `strict` (all the work in Triton, the only one that earns a reward) and `hybrid` (PyTorch
may do what Triton does not, reported with Triton's share), and `coverage` measured in the candidate's run."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import FIXTURES
from tests.sources import pair, read_pairs
from tests.verifier.zoo_cases import zoo_cases
from verifier import Task, VerifierPool, declared_policy, policy_line
from verifier.rules import HYBRID_ALLOWS

HYBRID = FIXTURES / "hybrid"
TASK = HYBRID / "linear_relu.py"
CANDIDATE = HYBRID / "linear_relu_hybrid.py"


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(size=2, device="cpu") as pool:
        yield pool


def line_of(path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_strict_refuses_pytorch_doing_the_work_and_says_so_plainly(pool):
    report = pool.verify(*pair(TASK, CANDIDATE), trials=2)
    assert report.verdict == "rejected" and report.reward == 0 and report.policy == "strict"
    line = line_of(CANDIDATE, "self.linear(x)")
    assert report.message.startswith("The matrix multiplication ran in PyTorch during the compared calls (aten.addmm")
    assert f"the source computes in PyTorch at line {line}); the strict policy requires Triton" in report.message
    assert "--policy hybrid" in report.message and "anti-hacking" not in report.message
    assert [v["rule"] for v in report.violations] == ["TRI302", "TRI360"]
    assert not report.passed


def test_a_convolution_left_to_pytorch_is_named_as_such(pool):
    candidate = HYBRID / "conv_relu_hybrid.py"
    report = pool.verify(*pair(HYBRID / "conv_relu.py", candidate), trials=2)
    assert report.message.startswith("The convolution ran in PyTorch during the compared calls (aten.convolution")
    assert f"at line {line_of(candidate, 'self.conv(x)')})" in report.message


def test_hybrid_accepts_it_as_correct_with_its_coverage_and_no_reward(pool):
    report = pool.verify(*pair(TASK, CANDIDATE), trials=2, policy="hybrid")
    assert report.verdict == "correct", report.message
    assert report.reward == 0 and report.passed
    assert report.coverage == 0.5  # one Triton launch next to one library op, on the CPU's share of ops
    assert report.library_calls == ["torch.nn.functional.linear"]
    assert [v["rule"] for v in report.violations] == ["TRI302", "TRI360"]  # explained and seen, not refused
    assert (
        "coverage: 50% of the ops in Triton (hybrid policy); in PyTorch: torch.nn.functional.linear" in report.summary()
    )


def test_a_candidate_that_declares_itself_hybrid_is_still_held_to_the_policy_it_is_verified_under(pool, tmp_path):
    """The `# tritonize-policy:` line is read by `tritonize verify` alone, as its default for a file the user
    converted; the pool (rewards, evaluation, the server) never reads it, and even where it is taken a hybrid verdict
    earns nothing and says what PyTorch did."""
    forged = policy_line("hybrid", []) + CANDIDATE.read_text()
    assert declared_policy(forged) == "hybrid"
    report = pool.verify(Task.from_file(TASK), forged, trials=2)
    assert report.verdict == "rejected" and report.reward == 0 and report.policy == "strict", report.message
    (tmp_path / "candidate.py").write_text(forged)
    taken = subprocess.run(
        [sys.executable, "-m", "verifier", "verify", str(TASK), str(tmp_path / "candidate.py"), "--trials", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert taken.stdout.startswith("verdict: correct under hybrid (not all Triton: torch.nn.functional.linear)")
    assert "reward: 0 " in taken.stdout and "checking under the hybrid policy" in taken.stderr
    held = subprocess.run(
        [
            sys.executable,
            "-m",
            "verifier",
            "verify",
            str(TASK),
            str(tmp_path / "candidate.py"),
            "--trials",
            "2",
            "--policy",
            "strict",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert held.returncode == 1 and held.stdout.startswith("verdict: rejected"), held.stdout


def test_an_all_triton_kernel_has_full_coverage_under_either_policy(pool):
    for policy in ("strict", "hybrid"):
        report = pool.verify(*pair(FIXTURES / "tasks/softmax.py", FIXTURES / "candidates/softmax_ok.py"), policy=policy)
        assert report.verdict == "correct" and report.reward == 1.0, report.message
        assert report.coverage == 1.0 and report.library_calls == []


# the cases refused for PyTorch doing the work or a name not known to be allowed, which hybrid accepts
HACKS = [c for c in zoo_cases() if c.verdict != "correct" and not set(c.rules) <= HYBRID_ALLOWS]


def test_hybrid_still_refuses_every_honesty_hack(pool):
    """Every zoo case that fails for something other than what hybrid accepts gets the same verdict."""
    assert len(HACKS) >= 30
    reports = pool.verify_many(
        read_pairs([(c.task, c.candidate) for c in HACKS]), trials=2, timeout=20, memory_limit=2**30, policy="hybrid"
    )
    wrong = {c.id: (r.verdict, r.message) for c, r in zip(HACKS, reports) if r.verdict != c.verdict}
    assert wrong == {}


def test_an_unknown_policy_is_refused(pool):
    with pytest.raises(ValueError, match="policy must be one of strict, hybrid, got 'lenient'"):
        pool.verify(*pair(TASK, CANDIDATE), policy="lenient")
