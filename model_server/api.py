"""The HTTP API's contract, shared by the server and its clients: the default address, the one conversion
request and the `/v1/convert` events (docs/ARCHITECTURE.md, "The HTTP API").

Standard library only (and the verifier's light names, which load no torch), so a client (the language server)
can import it without the server's dependencies.
`ConvertRequest` is the conversion's only declaration: the command line fills it from flags, the language
server from its settings, the HTTP API validates its body against it (the schema is built from its fields) and
the loop runs it. Every event carries `text`, the one line `describe` makes of it, so the command line, the
language server and any other client print the same progress.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from verifier import Task, UsageError, parse_dynamic

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
MAX_SOURCE = 512 * 1024
POLICY = "strict"  # the one default, as for `tritonize verify`: only an all-Triton kernel earns the name
TASK_NAME = rf"^[A-Za-z_][A-Za-z0-9_]{{0,{Task.MAX_NAME - 1}}}$"


def _limits(description: str, **limits: Any) -> dict[str, Any]:
    """A field's description and bounds (the names pydantic's `Field` takes: ge, gt, le, min_length, ...)."""
    return {"description": description, **limits}


@dataclass
class ConvertRequest:
    """One conversion: the task's source and module name, which backend and model, how much to try, when to
    stop, how hard to verify, and the policy. Each field's `metadata` holds its bounds and description; building
    one checks them (ValueError naming the field)."""

    task: str = field(metadata=_limits("source of a KernelBench task module", min_length=1, max_length=MAX_SOURCE))
    task_name: str = field(
        default="task",
        metadata=_limits(
            "the task's module name: a Python identifier of ASCII letters, digits and underscores, not starting "
            f"with a digit, at most {Task.MAX_NAME} characters",
            pattern=TASK_NAME,
        ),
    )
    backend: str | None = field(
        default=None, metadata=_limits("the backend; the server's own when omitted", max_length=64)
    )
    model: str | None = field(default=None, metadata=_limits("a model the backend serves", max_length=256))
    samples: int = field(default=4, metadata=_limits("candidates per round", ge=1, le=64))
    rounds: int = field(
        default=2,
        metadata=_limits(
            "rounds; a repair round runs only when the last one had failures (or, with a seeded model, to improve on "
            "the best kernel)",
            ge=1,
            le=10,
        ),
    )
    target_speedup: float | None = field(
        default=None, metadata=_limits("stop once a candidate is this much faster than eager", gt=0)
    )
    deadline: float | None = field(
        default=None, metadata=_limits("seconds after which no new work starts", gt=0, le=24 * 3600)
    )
    trials: int = field(default=5, metadata=_limits("input sets per verification", ge=1, le=100))
    timeout: float = field(
        default=60.0, metadata=_limits("seconds per run of the reference or candidate", gt=0, le=3600)
    )
    policy: Literal["strict", "hybrid"] = field(
        default=POLICY,
        metadata=_limits(
            "strict: only an all-Triton kernel is written; hybrid: a library call plus Triton may be, when it is "
            "the only correct kind or meaningfully faster (never rewarded)"
        ),
    )

    dynamic: str | None = field(
        default=None,
        metadata=_limits(
            "accept other sizes along these dimensions of forward's tensor inputs: `auto` (all but the innermost "
            "that can vary), `0` (dimension 0 of each), `x:0,y:1`; verified at the example sizes and three others. "
            "Omitted: the kernels are specialised to the example's sizes",
            max_length=512,
        ),
    )

    def __post_init__(self) -> None:
        for each in dataclasses.fields(self):
            problem = field_problem(getattr(self, each.name), each.metadata)
            if problem:
                raise ValueError(f"{each.name} {problem}")
        if self.policy not in ("strict", "hybrid"):
            raise ValueError(f"policy must be strict or hybrid, got {self.policy!r}")
        if self.dynamic is not None:
            try:
                self.dynamic = str(parse_dynamic(self.dynamic))
            except UsageError as exc:
                raise ValueError(f"dynamic: {exc}") from None

    def to_body(self) -> dict[str, Any]:
        """The request as the HTTP API takes it (fields left at their default are sent too)."""
        return dataclasses.asdict(self)


def field_problem(value: Any, limits: Mapping[str, Any]) -> str | None:
    """What is wrong with `value` against a field's bounds (its metadata), or None."""
    if value is None:
        return None
    if "pattern" in limits and not re.match(limits["pattern"], value):
        return (
            "must be a Python identifier (ASCII letters, digits and underscores, not starting with a digit, at most "
            f"{Task.MAX_NAME} characters): it names the task's module"
        )
    checks = {
        "ge": (lambda v, b: v >= b, "at least"),
        "gt": (lambda v, b: v > b, "greater than"),
        "le": (lambda v, b: v <= b, "at most"),
    }
    for name, (holds, words) in checks.items():
        if name in limits and not holds(value, limits[name]):
            return f"must be {words} {limits[name]}, got {value}"
    if "min_length" in limits and len(value) < limits["min_length"]:
        return "must not be empty"
    if "max_length" in limits and len(value) > limits["max_length"]:
        return f"must be at most {limits['max_length']} characters long"
    return None


class Accepted(TypedDict):
    """First event of every stream: which backend and device will do the work."""

    event: Literal["accepted"]
    backend: str
    device: str
    text: str


class Queued(TypedDict):
    """The conversion waits for a running one to finish."""

    event: Literal["queued"]
    message: str
    text: str


class Round(TypedDict):
    """A round of generation starts."""

    event: Literal["round"]
    round: int
    samples: int
    text: str


class Candidate(TypedDict):
    """One candidate was verified; `message` is its report's. `label` says what the candidate is (empty for a
    model's sample); `policy` is `hybrid` when a library call does part of its work on purpose."""

    event: Literal["candidate"]
    round: int
    index: int
    of: int
    verdict: str
    reward: float
    max_abs_error: float | None
    candidate_ms: float | None
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    message: str
    label: str
    policy: str
    text: str


class Note(TypedDict):
    """Something worth knowing that is not a failure (a backend with nothing new to try)."""

    event: Literal["note"]
    round: int
    message: str
    text: str


class Error(TypedDict, total=False):
    """The conversion cannot go on (a task that does not load, a backend failure)."""

    event: Literal["error"]
    round: int
    message: str
    text: str


class Best(TypedDict):
    """The candidate written: where it came from, what it is, and why it was chosen over the others."""

    round: int
    index: int
    source: str
    label: str
    policy: str
    dynamic: str | None  # the dimensions it accepts any size along (verified at other sizes there); None: specialised
    why: str


class Done(TypedDict):
    """Last event: why the loop stopped, how many candidates it verified, the winner and its report."""

    event: Literal["done"]
    stopped: str
    candidates: int
    best: Best | None
    report: dict | None
    text: str


Event = Accepted | Queued | Round | Candidate | Note | Error | Done


def accepted(backend: str, device: str) -> Accepted:
    return _described({"event": "accepted", "backend": backend, "device": device, "text": ""})


def queued() -> Queued:
    return _described({"event": "queued", "message": "waiting for a running conversion to finish", "text": ""})


def round_started(round_number: int, samples: int) -> Round:
    return _described({"event": "round", "round": round_number, "samples": samples, "text": ""})


def candidate(
    round_number: int,
    index: int,
    of: int,
    verdict: str,
    reward: float,
    max_abs_error: float | None,
    timing: dict,
    message: str,
    label: str = "",
    policy: str = "strict",
) -> Candidate:
    return _described(
        {
            "event": "candidate",
            "round": round_number,
            "index": index,
            "of": of,
            "verdict": verdict,
            "reward": reward,
            "max_abs_error": max_abs_error,
            "candidate_ms": timing.get("candidate_ms"),
            "speedup_vs_eager": timing.get("speedup_vs_eager"),
            "speedup_vs_compile": timing.get("speedup_vs_compile"),
            "message": message,
            "label": label,
            "policy": policy,
            "text": "",
        }
    )


def note(round_number: int, message: str) -> Note:
    return _described({"event": "note", "round": round_number, "message": message, "text": ""})


def error(message: str, round_number: int | None = None) -> Error:
    event: Error = {"event": "error", "message": message, "text": ""}
    if round_number is not None:
        event["round"] = round_number
    return _described(event)


def done(stopped: str, candidates: int, best: Best | None, report: dict | None) -> Done:
    return _described(
        {"event": "done", "stopped": stopped, "candidates": candidates, "best": best, "report": report, "text": ""}
    )


def describe(event: Event) -> str:
    """The progress line for an event ("round 1: candidate 3/8 incorrect (max err 0.2)")."""
    kind = event["event"]
    if kind == "accepted":
        return f"{event['backend']} backend on {event['device']}"
    if kind == "round":
        return f"round {event['round']}: generating up to {event['samples']} candidates"
    if kind == "candidate":
        details = []
        if event["max_abs_error"] is not None:
            details.append(f"max err {event['max_abs_error']:.2g}")
        if event["speedup_vs_eager"] is not None:
            details.append(f"{event['speedup_vs_eager']:.2f}x eager")
        suffix = f" ({', '.join(details)})" if details else ""
        what = f": {event['label']}" if event.get("label") else ""
        what += " [hybrid]" if event.get("policy") == "hybrid" else ""
        return f"round {event['round']}: candidate {event['index']}/{event['of']} {event['verdict']}{suffix}{what}"
    if kind == "done":
        best = event["best"]
        if best is None:
            return f"done: {event['stopped']}"
        return f"done: {event['stopped']}; chose round {best['round']} candidate {best['index']}: {best['why']}"
    prefix = f"round {event['round']}: " if "round" in event else ""
    return prefix + event["message"]


def _described(event):
    event["text"] = describe(event)
    return event
