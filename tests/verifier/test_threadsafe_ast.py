"""Parsing from many threads at once while other Python code runs, as training.data's workers and the verifier's
audits do."""

from __future__ import annotations

import ast
import gc
import time
from concurrent.futures import ThreadPoolExecutor

import verifier  # noqa: F401  (importing the package makes ast.parse take turns)

SOURCE = "\n".join(f"def f{i}(x):\n    return " + " + ".join(f"(x * {j})" for j in range(40)) for i in range(20))


class _Garbage:
    """A reference cycle whose finalizer runs Python code: collected in the middle of another thread's parse, it
    lets a third thread start parsing (how Python 3.11's shared recursion depth goes wrong)."""

    def __init__(self):
        self.cycle = self

    def __del__(self):
        time.sleep(0)


def _parse_among_garbage() -> str:
    for _ in range(5):
        [_Garbage() for _ in range(20)]
        tree = ast.parse(SOURCE)
    return ast.dump(tree)


def test_threads_parsing_at_once_get_the_same_trees():
    """Without the lock, Python 3.11.7 raised `SystemError: AST constructor recursion depth mismatch` once in
    every run of this test (five runs); with it, every parse gives the tree one thread alone gives."""
    assert getattr(ast.parse, "threadsafe", False)
    expected = ast.dump(ast.parse(SOURCE))
    thresholds = gc.get_threshold()
    gc.set_threshold(50, 5, 5)
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(lambda _: _parse_among_garbage(), range(64)))
    finally:
        gc.set_threshold(*thresholds)
    assert results == [expected] * 64
