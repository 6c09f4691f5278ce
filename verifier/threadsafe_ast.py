"""`ast.parse` that threads can call at once.

CPython 3.11 keeps the AST constructor's recursion depth in interpreter-wide state, so two threads parsing at the
same time can fail with `SystemError: AST constructor recursion depth mismatch` (CPython gh-106905; seen here in
`training.data`, whose workers rewrite Inductor's code while the verifier audits candidates). Every parse of this
process takes its turn under one lock instead; a parse takes microseconds to milliseconds.
"""

from __future__ import annotations

import ast
import functools
import threading

_LOCK = threading.Lock()


def install() -> None:
    """Make `ast.parse` take the lock (once per process)."""
    if getattr(ast.parse, "threadsafe", False):
        return
    unsafe = ast.parse

    @functools.wraps(unsafe)
    def parse(*args, **kwargs):
        with _LOCK:
            return unsafe(*args, **kwargs)

    parse.threadsafe = True
    ast.parse = parse
