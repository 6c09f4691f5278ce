"""A tiny randomly initialised Llama with a byte-level BPE tokenizer, built offline (hub downloads are impossible).

Its output is garbage by construction: tests use it to drive the real loading and generation code paths.
"""

from __future__ import annotations

from pathlib import Path

from training import scratch


def build_tiny_llama(directory: Path, seed: int = 0) -> Path:
    """Write a ~0.1M-parameter Llama and its tokenizer to `directory`; return it."""
    scratch.build(directory, [], "tiny", 4096, seed)
    return directory
