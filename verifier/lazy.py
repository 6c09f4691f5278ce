"""Public names that load their module on first use, so that importing a package's API costs nothing until a name
is used (the editor's diagnostics start without importing torch)."""

from __future__ import annotations

import importlib
from collections.abc import Callable


def attributes(package: str, public: dict[str, str]) -> Callable[[str], object]:
    """The `__getattr__` of `package`: each name in `public` from the module it maps to."""

    def __getattr__(name: str) -> object:
        if name not in public:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(public[name]), name)

    return __getattr__
