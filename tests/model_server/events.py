"""A conversion's events as tests compare them: without the heartbeat notes a round sends every few seconds while
its backend generates (how many depends on the machine's load)."""

from __future__ import annotations


def without_heartbeats(events: list[dict]) -> list[dict]:
    return [e for e in events if not (e["event"] == "note" and " is still generating (" in e["message"])]


def kinds(events: list[dict]) -> list[str]:
    """The events' kinds in order, heartbeats left out."""
    return [e["event"] for e in without_heartbeats(events)]
