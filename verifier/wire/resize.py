"""The other sizes of a resized call (`Call["resize"]`): both sides compute them from the same rule, so the
reference and the candidate draw identical inputs without exchanging them.

A dynamic dimension of example size n is verified at about half (odd, so masks are exercised), about one and a half
times, and 1 (a batch of one, where broadcasting rules differ); never n itself, never 0.
"""

from __future__ import annotations

STEPS = ("smaller", "larger", "one")


def other_size(size: int, step: str) -> int:
    """The size a dynamic dimension of example size `size` takes in a call of `step`."""
    if step == "one":
        return 1
    if step == "smaller":
        smaller = size // 2 + (1 - size // 2 % 2)
        return smaller if 2 <= smaller < size else size + 3
    return size + size // 2 + 1
