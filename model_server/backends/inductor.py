"""The built-in backend: candidates derived from TorchInductor's generated Triton, no model weights needed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from model_server.backends.base import BackendError, GenerationRequest
from model_server.inductor.rewrite import RewriteError, rewrite
from verifier.sandbox import Limits, default_memory_limit, launch_prefix, run_limited


class InductorBackend:
    """One candidate from Inductor's code. On a GPU, when Inductor hands an op to a library (cuBLAS matmul),
    the task is compiled again with Inductor's Triton matmul/conv templates, which are Triton.

    A repair round has nothing new to offer (Inductor is deterministic), so later rounds return nothing.
    """

    name = "inductor"

    def __init__(self, timeout: float = 600.0):
        self.timeout = timeout

    def models(self) -> list[str]:
        return ["inductor"]

    def generate(self, request: GenerationRequest) -> list[str]:
        if request.round > 1:
            return []
        try:
            return [self._candidate(request, templates=False)]
        except (BackendError, RewriteError) as exc:
            if request.device != "cuda":
                raise BackendError(f"the inductor backend cannot convert {request.task.name}: {exc}") from exc
            first = exc
        try:
            return [self._candidate(request, templates=True)]
        except (BackendError, RewriteError) as exc:
            raise BackendError(
                f"the inductor backend cannot convert {request.task.name}: {first}; "
                f"with Inductor's Triton templates: {exc}"
            ) from exc

    def _candidate(self, request: GenerationRequest, templates: bool) -> str:
        captured = self._capture(request.task, request.device, templates)
        return rewrite(captured, request.task.read_text(), request.task.name)

    def _capture(self, task: Path, device: str, templates: bool) -> dict:
        prefix, _ = launch_prefix(isolate=True)
        command = [*prefix, sys.executable, "-m", "model_server.inductor.capture", str(task), "--device", device]
        if templates:
            command.append("--templates")
        limits = Limits(self.timeout, default_memory_limit())
        done = run_limited(command, limits)
        if done.exceeded == "timeout":
            raise BackendError(f"Inductor did not finish compiling the task within {self.timeout:.0f} s")
        if done.exceeded == "memory":
            raise BackendError(
                f"Inductor's compile used more than {limits.memory // 2**20} MiB of memory and was stopped"
            )
        lines = done.stdout.strip().splitlines()
        try:
            result = json.loads(lines[-1]) if lines else None
        except json.JSONDecodeError:
            result = None
        if not isinstance(result, dict):
            tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
            raise BackendError(f"Inductor's capture failed (exit {done.returncode}): {tail[0]}")
        if "error" in result:
            raise BackendError(result["error"])
        return result
