"""Text shared by the harvesters' KernelBench modules: the size constants a task uses, and its input functions."""

from __future__ import annotations

import re


def size_constants(sizes: dict[str, int], text: str) -> list[str]:
    """`NAME = value` for each size symbol that `text` uses as a word."""
    return [f"{name} = {value}" for name, value in sizes.items() if re.search(rf"\b{name}\b", text)]


def input_functions(inputs: tuple[str, ...]) -> str:
    """`get_inputs()` returning the expressions `inputs`, and an empty `get_init_inputs()`."""
    listed = ",\n        ".join(inputs)
    return f"""def get_inputs():
    return [
        {listed},
    ]


def get_init_inputs():
    return []
"""
