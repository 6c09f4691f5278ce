"""The HTTP API's contract, shared by the server and its clients: the default address and the `/v1/convert`
events (docs/ARCHITECTURE.md, "The HTTP API").

Standard library only, so a client (the language server) can import it without the server's dependencies.
Every event carries `text`, the one line `describe` makes of it, so the command line, the language server
and any other client print the same progress.
"""

from __future__ import annotations

from typing import Literal, TypedDict

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


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
