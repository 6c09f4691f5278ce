"""The built-in backend: candidates derived from TorchInductor's generated Triton, no model weights needed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from model_server.backends.base import BackendError, GenerationRequest
from model_server.inductor.rewrite import RewriteError, rewrite
from verifier.sandbox import launch_prefix


class InductorBackend:
    """One candidate from Inductor's default code, plus one from its Triton matmul templates on a GPU.

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
        variants = [False, True] if request.device == "cuda" else [False]
        sources, errors = [], []
        for templates in variants[: max(1, request.samples)]:
            try:
                captured = self._capture(request.task, request.device, templates)
                sources.append(rewrite(captured, request.task.read_text(), request.task.name))
            except (BackendError, RewriteError) as exc:
                errors.append(str(exc))
        if not sources:
            raise BackendError(f"the inductor backend cannot convert {request.task.name}: {'; '.join(errors)}")
        return list(dict.fromkeys(sources))

    def _capture(self, task: Path, device: str, templates: bool) -> dict:
        prefix, _ = launch_prefix(isolate=True)
        command = [*prefix, sys.executable, "-m", "model_server.inductor.capture", str(task), "--device", device]
        if templates:
            command.append("--templates")
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired as exc:
            raise BackendError(f"Inductor did not finish compiling the task within {self.timeout:.0f} s") from exc
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
