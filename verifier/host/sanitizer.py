"""`--sanitize`: one more run of the candidate under NVIDIA's compute-sanitizer (memcheck), which sees every
out-of-bounds or misaligned access to device memory, reads included, down to the allocation's exact size.

Guard zones (TRI358) catch stray writes in every run; memcheck also catches reads, at the cost of running
the kernels 10-100x slower, so it is an option. The sanitized run allocates every tensor on its own (the
caching allocator is off) and without guard zones, so an access one element past a tensor is past its
allocation. This module finds the tool and reads its log; the run itself is a sandboxed job
(`verifier/sandbox/memcheck.py` builds its command line).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import sys

EXECUTABLE = "compute-sanitizer"
# The first line of an error block; everything memcheck reports as an error starts with one of these.
ERROR_STARTS = ("Invalid ", "Misaligned ", "Out-of-range ", "Program hit ", "Malloc/Free ", "Hardware ")
SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
PREFIX = re.compile(r"^=+ ?")
WHERE = ("Access at", "Address", "and is", "is ")  # the lines that say where the access went (wording varies)


def find() -> str | None:
    """The compute-sanitizer executable: on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin, or in an NVIDIA
    pip package of this interpreter; None if there is none."""
    found = shutil.which(EXECUTABLE)
    if found:
        return found
    roots = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    for root in filter(None, roots):
        path = os.path.join(root, "bin", EXECUTABLE)
        if os.access(path, os.X_OK):
            return path
    for site in sys.path:
        for path in sorted(glob.glob(os.path.join(site, "nvidia", "**", EXECUTABLE), recursive=True)):
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None


def read_log(text: str) -> tuple[int, list[str]]:
    """(error count, one line per reported error) from memcheck's log. An error block is its first line
    ("Invalid __global__ read of size 4 bytes") and its indented details; each error becomes one line with
    the kernel, the thread and the address, e.g. "Invalid __global__ read of size 4 bytes at
    _relu_kernel+0xf0 in candidate.py:13 by thread (32,0,0) in block (6,0,0): Access at 0x7f.. is out of
    bounds and is 1 bytes after the nearest allocation at 0x7f.. of size 6,400 bytes"."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    count = None
    for raw in text.splitlines():
        line = PREFIX.sub("", raw)
        summary = SUMMARY.search(line)
        if summary:
            count = int(summary.group(1))
            current = None
        elif line.startswith(ERROR_STARTS):
            current = [line.strip()]
            blocks.append(current)
        elif current is not None and line[:1].isspace():
            detail = line.strip()
            if detail.startswith(("at ", "by thread", *WHERE)) or "out of bounds" in detail:
                current.append(detail)
        elif current is not None and not line.strip():
            current = None
    errors = [_one_line(block) for block in blocks]
    return (count if count is not None else len(errors)), errors


def _one_line(parts: list[str]) -> str:
    where = [p for p in parts[1:] if p.startswith(WHERE) or "out of bounds" in p]
    head = " ".join(p for p in parts if p not in where)
    address = " ".join(where)
    return f"{head}: {address}" if address else head
