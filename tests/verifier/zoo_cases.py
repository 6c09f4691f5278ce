"""The fixture zoo as test cases: every file declares its task and the verdict it must get."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@dataclass(frozen=True)
class Case:
    candidate: Path
    task: Path
    verdict: str
    rules: tuple[str, ...]

    @property
    def id(self) -> str:
        return self.candidate.stem


def _header(path: Path) -> tuple[str, str]:
    lines = path.read_text().splitlines()
    task = lines[0].removeprefix("# task:").strip()
    expect = lines[1].removeprefix("# expect:").split("--")[0].strip()
    return task, expect


def zoo_cases() -> list[Case]:
    """Correct kernels for every task family, then every hack and fault in the zoo."""
    cases = []
    for candidate in sorted((FIXTURES / "candidates").glob("*_ok.py")):
        task = FIXTURES / "tasks" / (candidate.stem.removesuffix("_ok") + ".py")
        cases.append(Case(candidate, task, "correct", ()))
    for candidate in sorted((FIXTURES / "zoo").glob("*.py")):
        task, expect = _header(candidate)
        verdict, *rules = expect.split()
        cases.append(Case(candidate, FIXTURES / "tasks" / f"{task}.py", verdict, tuple(rules)))
    return cases


def sandbox_case(name: str) -> Case:
    candidate = FIXTURES / "sandbox" / f"{name}.py"
    task, expect = _header(candidate)
    verdict, *rules = expect.split()
    return Case(candidate, FIXTURES / "tasks" / f"{task}.py", verdict, tuple(rules))
