"""Candidate generators behind one interface; `BACKENDS` names the ones this build knows."""

from __future__ import annotations

from model_server.backends.base import Backend, BackendError, GenerationRequest

BACKENDS = ("inductor", "openai", "transformers", "vllm")


def create_backend(
    name: str,
    model: str | None = None,
    profile: str = "autotriton",
    device: str = "auto",
    base_url: str | None = None,
    api_key: str | None = None,
    tensor_parallel_size: int = 1,
) -> Backend:
    """The backend called `name`, or BackendError listing the ones that exist."""
    if name == "inductor":
        from model_server.backends.inductor import InductorBackend

        if model not in (None, "inductor"):
            raise BackendError(f"the inductor backend has no model `{model}`; it derives kernels without one")
        return InductorBackend()
    if name == "transformers":
        from model_server.backends.transformers_backend import TransformersBackend

        return TransformersBackend(model, profile, device=device)
    if name == "openai":
        from model_server.backends.openai_backend import OpenAIBackend

        return OpenAIBackend(model, base_url, api_key, profile)
    if name == "vllm":
        from model_server.backends.vllm_backend import VLLMBackend

        return VLLMBackend(model, profile, tensor_parallel_size=tensor_parallel_size)
    raise BackendError(f"unknown backend `{name}`; available: {', '.join(BACKENDS)}")


__all__ = ["BACKENDS", "Backend", "BackendError", "GenerationRequest", "create_backend"]
