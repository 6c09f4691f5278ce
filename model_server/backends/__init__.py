"""Candidate generators behind one interface; `BACKENDS` names the ones this build knows."""

from model_server.backends.base import Backend, BackendError, GenerationRequest
from model_server.backends.inductor import InductorBackend

BACKENDS: dict[str, type] = {"inductor": InductorBackend}


def create_backend(name: str, **options) -> Backend:
    """The backend called `name`, or BackendError listing the ones that exist."""
    if name not in BACKENDS:
        raise BackendError(f"unknown backend `{name}`; available: {', '.join(sorted(BACKENDS))}")
    return BACKENDS[name](**options)


__all__ = ["BACKENDS", "Backend", "BackendError", "GenerationRequest", "create_backend"]
