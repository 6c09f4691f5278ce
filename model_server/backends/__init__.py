"""Candidate generators behind one interface; `BACKENDS` names the ones this build knows."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from model_server.backends.base import Backend, BackendError, Batch, Generated, GenerationRequest, collect

BACKENDS = ("inductor", "openai", "transformers", "vllm")
DEFAULT_MAX_TOKENS = 2048


@dataclass(frozen=True)
class BackendConfig:
    """Which backend generates candidates, and what it needs: a model, a prompt profile, an upstream."""

    name: str = "inductor"
    model: str | None = None
    profile: str = "autotriton"
    device: str = "auto"
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    tensor_parallel_size: int = 1
    batch: int = 32  # transformers: the most sequences one generate call samples for concurrent requests
    compile: bool = False  # transformers: a static KV cache, its decoding step compiled on a GPU
    dtype: str = "auto"  # transformers: the weights' dtype while sampling (auto: float32 becomes bfloat16 on a GPU)
    seed_from: str | None = None  # a model backend: start from this backend's best kernel (only "inductor")
    max_tokens: int = DEFAULT_MAX_TOKENS  # model backends: the most tokens of one reply, unless a request says


def create_backend(config: BackendConfig) -> Backend:
    """The backend `config` names (with `seed_from`: seeded by the built-in one), or BackendError listing the ones
    that exist."""
    if config.seed_from is not None:
        from model_server.backends.inductor import InductorBackend
        from model_server.backends.seeded import SeededBackend

        if config.seed_from != "inductor":
            raise BackendError(f"--seed-from takes `inductor` (the built-in backend), not `{config.seed_from}`")
        if config.name == "inductor":
            raise BackendError(
                "--seed-from inductor needs a model backend to improve on it: openai, transformers or vllm"
            )
        return SeededBackend(InductorBackend(), create_backend(replace(config, seed_from=None)))
    if config.name == "inductor":
        from model_server.backends.inductor import InductorBackend

        if config.model not in (None, "inductor"):
            raise BackendError(f"the inductor backend has no model `{config.model}`; it derives kernels without one")
        return InductorBackend()
    if config.name == "transformers":
        from model_server.backends.transformers_backend import TransformersBackend

        return TransformersBackend(
            config.model,
            config.profile,
            device=config.device,
            batch=config.batch,
            compile=config.compile,
            dtype=config.dtype,
            max_new_tokens=config.max_tokens,
        )
    if config.name == "openai":
        from model_server.backends.openai_backend import OpenAIBackend

        return OpenAIBackend(config.model, config.base_url, config.api_key, config.profile, config.max_tokens)
    if config.name == "vllm":
        from model_server.backends.vllm_backend import VLLMBackend

        return VLLMBackend(
            config.model, config.profile, max_tokens=config.max_tokens, tensor_parallel_size=config.tensor_parallel_size
        )
    raise BackendError(f"unknown backend `{config.name}`; available: {', '.join(BACKENDS)}")


__all__ = [
    "BACKENDS",
    "DEFAULT_MAX_TOKENS",
    "Backend",
    "BackendConfig",
    "BackendError",
    "Batch",
    "Generated",
    "GenerationRequest",
    "collect",
    "create_backend",
]
