"""The built-in backend: candidates derived from TorchInductor's generated Triton, no model weights needed."""

from __future__ import annotations

import atexit
import hashlib
import json
import re
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from model_server.backends.base import BackendError, Batch, Generated, GenerationRequest
from model_server.inductor.rewrite import (
    RewriteError,
    Variant,
    matmul_tile,
    rewrite,
    uses_dot,
    uses_library,
    uses_library_convolution,
    uses_library_matmul,
)
from verifier import Spare, cache_dir, default_memory_limit, inductor_cache_dir, run_isolated

CAPTURE_FORMAT = 13  # bump when what `capture` records changes, so cached captures are made again
# Inductor compiles in a pool of 16 worker processes by default, started while it imports: for the few kernels
# of a compile without autotuning, starting that pool costs more than it saves (H100 box, 2026-11-23: 30 s ->
# 19 s per default-mode capture). Autotuning a dozen template configurations needs it (43 s -> 68 s without).
# The templates compile is an extra: where it takes longer than this (autotuning a convolution's templates on a
# busy machine), it is stopped and the default capture's candidates go ahead, so a conversion stays near a minute.
TEMPLATES_SECONDS = 45.0
HYBRID_RANK = 3  # the lowest place `_plan` gives the default capture's early candidates, whatever the templates
# Matmul templates are captured with one configuration, not autotuned (H100, 2026-11-25: a 1024x8192x8192
# GEMM's templates compile took 43.4 s autotuned and 24.9 s with one configuration, pool included), and the
# variants set their own tiles. These won on Hopper: tf32x3 (three TF32 tensor-core products per step) at
# 128x128x32 with 8 warps on 1024x8192x8192, at 128x64x32 with 4 warps on 4096^3; IEEE fp32 at 64x128x32.
TF32X3_TILES = (
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
    {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 4},
    {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 4},
)
IEEE_TILE = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 4}
# The project's implicit-GEMM convolutions in place of cuDNN's (`model_server/inductor/conv_gemm.py`, and
# `conv_transpose_gemm.py` for transposed ones). On KernelBench's 32-64-channel convolutions, channels last (H200,
# `benchmarks/conv_gemm.py`), the better of these two tiles at tf32x3 ran at 2.0-2.1x of cuDNN's fp32 (2026-11-28);
# on its transposed ones, at 1.2-6.2x (2026-11-29), where 128x128x32 with 8 warps, the second tile before, ran at
# 0.82-5.0x; IEEE fp32 at 0.6x of cuDNN on forward ones, kept as the fallback.
OWN_CONV_TILES = (
    {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 4, "precision": "tf32x3"},
    {"BLOCK_M": 256, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 8, "num_stages": 3, "precision": "tf32x3"},
)
OWN_CONV_IEEE = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 16, "num_warps": 4, "num_stages": 3, "precision": "ieee"}
# The project's matmul (`model_server/inductor/matmul_gemm.py`) in place of cuBLAS's, K split where the output has
# too few tiles to fill the GPU. Alone against cuBLAS's fp32 (H200, 2026-11-28, `benchmarks/matmul_gemm.py`): at
# 128x64x32 with 4 warps 1.04-1.13x on KernelBench's large-K, small-K and 4096-square shapes, where 128x128x32 with
# 8 warps ran at 0.65-0.80x; 128x64x64 won on the small K (1.23x) only.
OWN_MATMUL_TILES = tuple(
    {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": block_k, "GROUP_M": 8, "num_warps": 4, "num_stages": stages}
    | {"precision": "tf32x3"}
    for block_k, stages in ((32, 4), (64, 3))
)
OWN_MATMUL_IEEE = {**IEEE_TILE, "precision": "ieee"}
TEMPLATES_TF32X3 = "Inductor max-autotune Triton templates, tf32x3"
HYBRID = "Inductor's default: library call + fused Triton"
OWN_CONV = "Inductor's default with the project's implicit-GEMM convolution"
OWN_MATMUL = "Inductor's default with the project's matmul kernel"
LIBRARY_REWRITTEN = "Inductor, library ops rewritten as Triton"
TUNED = "Inductor's kernels, coordinate-descent tuned"
LOOPED = "Inductor's kernels, looped reductions, coordinate-descent tuned"
NO_LIBRARY = "Inductor's default kernels make no library call"
OWN_KERNELS_SUFFICE = "the project's convolution kernel takes every library call of Inductor's default compile"
CALLS_LIBRARY = "Inductor's default compile calls a library or failed: its tuning is not what the task needs"
NO_PERSISTENT_REDUCTION = "Inductor's default kernels hold no whole row of a reduction: there is no loop to choose"
# Which of Inductor's reduction strategies a kernel of its wrapper uses, by the heuristic that launches it.
HEURISTIC = re.compile(r"@triton_heuristics\.(\w+)\(")
# Convolution templates have no tile the variants set, so a convolution's keep Inductor's autotuning (and its pool).
CONVOLUTION = re.compile(r"\b(?:conv(?:_transpose)?[123]d|Conv(?:Transpose)?[123]d|convolution)\b")


@dataclass(frozen=True)
class _Planned:
    """A variant of one capture, and the variant to try in the repair round if it fails."""

    mode: str
    variant: Variant
    fallback: str | None = None  # label of the variant that replaces this one when it fails


class InductorBackend:
    """Distinct candidates from Inductor's code for the task, best first.

    Inductor's default kernels are always one. On a GPU, where they call no library, the task is also compiled with
    Inductor's coordinate-descent tuning, and its kernels are a second candidate where the tuning changed a launch
    configuration; where they hold whole rows of a reduction at once (persistent reductions), it is compiled once more
    with looped reductions, tuned, for a third. Where Inductor hands work to a library (cuBLAS matmul, cuDNN
    convolution, an ATen pool), the task is also compiled with Inductor's Triton matmul/conv templates (on a GPU), and
    the candidates are: the template at tf32x3 precision (fp32-accurate, on tensor cores) at the tile Inductor's
    autotuner chose and at other tiles, the template as Inductor made it (IEEE fp32), and the hybrid candidate that
    keeps the library call with Triton for the rest; where the library calls are convolutions or matmuls, the default
    capture with the project's own kernels in their place. The repair round replaces each candidate that failed with its
    fallback (a tf32x3 template falls back to IEEE fp32). Captures are cached by task, device and torch version, so
    converting the same task again starts at once. A long-lived process (the server, a benchmark) calls `start_spares`:
    each compile then runs in a capture process started ahead, its imports done; `close` ends them.
    """

    name = "inductor"

    def __init__(self, timeout: float = 600.0, cache: Path | None = None):
        self.timeout = timeout
        self.cache = cache if cache is not None else cache_dir() / "inductor-captures"
        self._spares: dict[tuple[str, str, bool], Spare] | None = None  # by device, mode and compile pool
        self._spares_lock = threading.Lock()

    def start_spares(self, device: str) -> None:
        """Keep a capture process ready for each compile a conversion on `device` starts, and replace each one as
        it is used. A capture's imports (torch and Inductor) take about 10 s of its 13-28 s on the GPU machine
        (H200, 2026-11-28); a spare has them done. Each idle spare holds the memory of those imports."""
        with self._spares_lock:
            if self._spares is None:
                self._spares = {}
                atexit.register(self.close)
        for mode in ("default", "templates", "tuned", "looped") if device == "cuda" else ("default", "templates"):
            self._replenish((device, mode, False))

    def close(self) -> None:
        """End the spare capture processes; later compiles start their own."""
        with self._spares_lock:
            spares, self._spares = self._spares, None
        for spare in (spares or {}).values():
            spare.close()

    def models(self) -> list[str]:
        return ["inductor"]

    def generate(self, request: GenerationRequest) -> Iterator[Batch]:
        if request.round > 1 and not request.feedback:
            return
        captures, handed = yield from self._captures(request)
        made, refusals = self._candidates(captures, request)
        if not made:
            raise BackendError(f"the inductor backend cannot convert {request.task.origin}: {'; '.join(refusals)}")
        if request.round == 1:
            early = {g.label for g in handed}
            rest = [generated for _, generated in made[: request.samples] if generated.label not in early]
            yield Batch(rest, not_made=tuple(refusals), spent=_spent(captures))
            return
        tried = {planned.variant.label for planned, _ in made[: request.samples]}
        failed = {item.get("label") for item in request.feedback}
        fallbacks = [planned.fallback for planned, _ in made if planned.variant.label in failed and planned.fallback]
        by_label = {planned.variant.label: generated for planned, generated in made}
        retries = [by_label[label] for label in dict.fromkeys(fallbacks) if label in by_label and label not in tried]
        yield Batch(retries[: request.samples], not_made=tuple(refusals))

    # ------------------------------------------------------------ candidates from captures

    def _candidates(self, captures: dict[str, dict], request: GenerationRequest):
        """(planned, generated) for every variant that rewrites, in order; and why the others could not (a
        rewrite's refusal, once where variants share it; a capture's error; not a templates compile stopped
        because nothing needed it)."""
        made, refusals = [], []
        for planned in _plan(captures):
            captured = captures.get(planned.mode)
            if captured is None or "error" in captured:
                continue
            try:
                source = rewrite(captured, request.task.source, request.task.file_name, planned.variant)
            except RewriteError as exc:
                if not any(refusal.endswith(f": {exc}") for refusal in refusals):  # another tile, the same reason
                    refusals.append(f"{planned.variant.label}: {exc}")
                continue
            policy = "hybrid" if planned.variant.hybrid else "strict"
            made.append((planned, Generated(source, planned.variant.label, policy, _dynamic_spec(captured))))
        errors = [f"{mode}: {c['error']}" for mode, c in captures.items() if "error" in c and not c.get("stopped")]
        return made, refusals + errors

    # ------------------------------------------------------------ captures

    def _captures(self, request: GenerationRequest) -> Generator[Batch, None, tuple[dict[str, dict], list[Generated]]]:
        """Inductor's output, default, with templates, tuned and looped (tuned, with looped reductions), each from
        the cache if it is there, and the candidates handed over early (the generator's return value). On a GPU
        the four compile in parallel; as soon as the default one shows whether it calls a library, those not
        needed are stopped (they would only hold CPUs and GPU memory that verification needs): the templates
        compile where it calls none or where the project's convolution kernel takes every call it makes, the tuned
        ones where it calls one, the looped one where it has no persistent reduction. On the CPU,
        where compiles are quick but share few cores and nothing can time a configuration, the templates compile
        starts only where it is needed, and none is tuned. While the other compile runs, the default capture's
        candidates that are sure to be among those returned are yielded. A templates or tuned compile that fails
        (time, memory) leaves the default capture's candidates."""
        task_source = request.task.source.encode()
        unneeded = {"templates": _Unneeded(), "tuned": _Unneeded(), "looped": _Unneeded()}
        with ThreadPoolExecutor(max_workers=4) as pool:

            def start(mode: str) -> Future:
                return pool.submit(self._capture, request, task_source, mode, unneeded.get(mode))

            running = {"default": start("default")}
            if request.device == "cuda":
                for mode in ("templates", "tuned", "looped"):
                    running[mode] = start(mode)
            default = running["default"].result()
            for mode, reason in _not_needed(default).items():
                unneeded[mode].set_because(reason)
            if "error" in default or uses_library(default):
                if self._own_kernels_suffice(default, request):
                    unneeded["templates"].set_because(OWN_KERNELS_SUFFICE)
                elif "templates" not in running:
                    running["templates"] = start("templates")
            pending = [f for mode, f in running.items() if mode != "default" and not unneeded[mode].is_set()]
            handed = self._early_candidates(default, request) if any(not f.done() for f in pending) else []
            if handed:
                yield Batch(handed, more=True)
            captures = {"default": default}
            templates = running.get("templates")
            if templates is not None:
                captures["templates"] = _failure_as_error(templates, "error" not in default, "max-autotune")
            if unneeded["templates"].reason == OWN_KERNELS_SUFFICE:  # even where it was cached or finished first
                captures["templates"] = {"error": f"not needed: {OWN_KERNELS_SUFFICE}", "stopped": True}
            for mode in ("tuned", "looped"):
                if mode in running:
                    captures[mode] = _failure_as_error(running[mode], True, mode)
        if all("error" in c for c in captures.values()):
            reasons = "; ".join(c["error"] for c in captures.values())
            raise BackendError(f"the inductor backend cannot convert {request.task.origin}: {reasons}")
        return captures, handed

    def _own_kernels_suffice(self, default: dict, request: GenerationRequest) -> bool:
        """Whether the default capture with the project's convolution kernel is an all-Triton candidate: then the
        templates compile is not worth its time (that kernel ran at 2.3-3.0x of Inductor's convolution templates
        on seven KernelBench convolutions, H200, 2026-11-28), nor the CPUs it holds. Not where it calls a library
        matmul too: Inductor's matmul templates are the measured choice for those."""
        own, _ = _own_kernels(default)
        if not own or uses_library_matmul(default):
            return False
        try:
            rewrite(default, request.task.source, request.task.file_name, own[0].variant)
        except RewriteError:
            return False
        return True

    def _early_candidates(self, default: dict, request: GenerationRequest) -> list[Generated]:
        """The default capture's candidates that will be among the first `request.samples` whatever the compile
        still running brings: where it calls no library, its kernels (`_plan` ranks them first or second, beside
        the tuned ones); else its hybrid and its first own-kernel one (ranked below HYBRID_RANK)."""
        if request.round != 1 or "error" in default:
            return []
        made, _ = self._candidates({"default": default}, request)
        if not uses_library(default):
            return [generated for _, generated in made] if request.samples >= 2 else []
        if request.samples < HYBRID_RANK:
            return []
        early = {planned.variant.label for planned in _plan({"default": default})[: HYBRID_RANK - 1]}
        return [generated for planned, generated in made if planned.variant.label in early]

    def _capture(self, request: GenerationRequest, task_source: bytes, mode: str, unneeded: _Unneeded | None) -> dict:
        key = _cache_key(task_source, request.device, mode, request.dynamic)
        cached = self.cache / f"{key}.json"
        if cached.exists():
            try:
                return json.loads(cached.read_text())
            except (OSError, json.JSONDecodeError):
                cached.unlink(missing_ok=True)
        started = time.monotonic()
        result = self._run_capture(request, mode, _Either(request.stopped, unneeded))
        if result.get("stopped") or result.get("out_of_memory"):
            return result
        spare = result.pop("spare", False)
        try:
            self.cache.mkdir(parents=True, exist_ok=True)
            partial = cached.with_suffix(f".{mode}.tmp")
            partial.write_text(json.dumps(result))
            partial.replace(cached)
        except OSError:
            pass  # an unwritable cache only costs the next conversion a compile
        return {**result, "wall_s": time.monotonic() - started, **({"spare": True} if spare else {})}

    def _run_capture(self, request: GenerationRequest, mode: str, stop: _Either) -> dict:
        """Run `model_server.inductor.capture` in the sandbox: its JSON, or {"error": ...} when Inductor cannot
        compile the task that way (with "stopped" when `stop` ended it first). A capture that ran out of GPU
        memory beside other work (the verification of candidates handed over early, another conversion) runs
        once more with the GPU alone, under a limit of its own. Running out of time or host memory is a
        BackendError (not cached). Inductor's own cache is the verifier's, so the torch.compile baseline of the
        same task finds the default-mode graph compiled; the tuned compile has a cache of its own, since Inductor
        would hand the configurations its tuning found to any later compile of the same kernels, the baseline's
        too."""
        result = self._run_capture_once(request, mode, stop, alone=False)
        if result.get("out_of_memory") and request.device == "cuda":
            result = self._run_capture_once(request, mode, stop, alone=True)
        return result

    def _run_capture_once(self, request: GenerationRequest, mode: str, stop: _Either, alone: bool):
        seconds = request.seconds_left(self.timeout if mode == "default" else min(self.timeout, TEMPLATES_SECONDS))
        if seconds < 1:
            raise BackendError("the deadline passed before Inductor could compile the task")
        task = request.task
        flags, pooled = _capture_flags(mode, task.source)
        flags += ["--dynamic", request.dynamic] if request.dynamic else []
        cache, env = _capture_env(mode, pooled)

        def program(folder: str) -> list[str]:
            return _capture_command(str(Path(folder, task.file_name)), request.device, flags)

        # the GPU is shared with correctness runs, and no timing runs meanwhile (Inductor autotunes on it)
        # a spare's flags are its mode's alone: a dynamic compile starts its own process
        spare = None if alone or request.dynamic else self._take_spare((request.device, mode, pooled))
        launched = time.time()
        if spare is not None:
            done = spare.run({task.file_name: task.source}, seconds, stop)
        else:
            done = run_isolated(
                program,
                device=request.device,
                seconds=seconds,
                files={task.file_name: task.source},
                writable=[str(cache)],
                packages=("verifier", "model_server"),
                env=env,
                stop=stop,
                gpu_alone=alone,
            )
        if done.exceeded == "stopped" and request.stopped():
            raise BackendError("the conversion was cancelled while Inductor compiled the task")
        if done.exceeded == "stopped":
            return {"error": f"not needed: {stop.unneeded.reason if stop.unneeded else 'stopped'}", "stopped": True}
        if done.exceeded == "timeout":
            raise BackendError(f"Inductor did not finish compiling the task within {seconds:.0f} s")
        if done.exceeded == "memory":
            raise BackendError(
                f"Inductor's compile used more than {default_memory_limit() // 2**20} MiB of memory and was stopped"
            )
        lines = done.stdout.strip().splitlines()
        try:
            result = json.loads(lines[-1]) if lines else None
        except json.JSONDecodeError:
            result = None
        if not isinstance(result, dict):
            tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
            raise BackendError(f"Inductor's capture failed (exit {done.returncode}): {tail[0]}")
        if result.get("task_failed"):
            raise BackendError(f"the task fails on its own: {result.get('error')}")
        _add_outside(result, done.waited_s, launched, time.time())
        return {**result, "spare": True} if spare is not None else result

    def _take_spare(self, key: tuple[str, str, bool]) -> Spare | None:
        """A ready spare capture for (device, mode, pooled), if spares are kept (and another started in its
        place, for the next conversion)."""
        with self._spares_lock:
            if self._spares is None:
                return None
            spare = self._spares.pop(key, None)
        self._replenish(key)
        if spare is not None and not spare.alive():
            spare.close()
            return None
        return spare

    def _replenish(self, key: tuple[str, str, bool]) -> None:
        device, mode, pooled = key
        cache, env = _capture_env(mode, pooled)
        flags, _ = _capture_flags(mode, "")  # the flags depend on the mode alone

        def program(folder: str) -> list[str]:
            return _capture_command(folder, device, flags, wait=True)

        with self._spares_lock:
            if self._spares is None or key in self._spares:
                return
            self._spares[key] = Spare(
                program, device=device, writable=[str(cache)], packages=("verifier", "model_server"), env=env
            )


def _dynamic_spec(captured: dict) -> str | None:
    """The dimensions a dynamic capture's kernels accept any size along (`x:0,y:0`): what they are verified at."""
    dynamic = captured.get("dynamic")
    if not dynamic:
        return None
    return ",".join(f"{name}:{dim}" for name, dims in sorted(dynamic["dims"].items()) for dim in dims)


def _not_needed(default: dict) -> dict[str, str]:
    """The extra compiles that the default capture shows to be of no use, and why: where it calls no library, the
    templates one, and the looped one unless a kernel holds whole rows of a reduction; else the tuned ones (whether
    the templates compile is needed then depends on the project's kernels: `_own_kernels_suffice`)."""
    if "error" in default or uses_library(default):
        return {"tuned": CALLS_LIBRARY, "looped": CALLS_LIBRARY}
    reasons = {"templates": NO_LIBRARY}
    if "persistent_reduction" not in HEURISTIC.findall(default["wrapper"]):
        reasons["looped"] = NO_PERSISTENT_REDUCTION
    return reasons


def _capture_flags(mode: str, task_source: str) -> tuple[list[str], bool]:
    """The capture's flags for `mode`, and whether Inductor's pool of compile workers is worth starting for it
    (only to autotune the templates of a convolution; matmul templates get one configuration, a 1x1
    convolution's included, since it becomes a matmul)."""
    if mode == "default":
        return [], False
    if mode == "tuned":
        return ["--tuned"], False
    if mode == "looped":
        return ["--tuned", "--reductions", "looped"], False
    return ["--templates", "--configs", "1"], CONVOLUTION.search(task_source) is not None


def _capture_command(target: str, device: str, flags: list[str], wait: bool = False) -> list[str]:
    """The capture's argv: of the task file `target`, or (`wait`) of a spare that reads its task's name in the
    folder `target` from stdin."""
    waiting = ["--wait"] if wait else []
    return [sys.executable, "-m", "model_server.inductor.capture", target, *waiting, "--device", device, *flags]


def _capture_env(mode: str, pooled: bool) -> tuple[Path, dict[str, str]]:
    """The Inductor cache a capture in `mode` writes (the verifier's; the tuned ones' own, shared by both tuned
    modes: the kernels they have in common are tuned once), and its environment."""
    cache = inductor_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    env = {"TORCHINDUCTOR_CACHE_DIR": str(cache / "tuned" if mode in ("tuned", "looped") else cache)}
    if not pooled:
        env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    return cache, env


def _add_outside(result: dict, waited: float, launched: float, finished: float) -> None:
    """Complete the capture's own split of its time (`seconds`) with what happened outside it: the wait for the
    GPU, the start of its process (for a spare, the handover) and its exit, measured by the wall clock it reported
    (`clock`, which is dropped)."""
    seconds = result.get("seconds")
    clock = result.pop("clock", None)
    if not isinstance(seconds, dict) or not isinstance(clock, dict):
        return
    began, ended = clock.get("began"), clock.get("ended")
    if not isinstance(began, int | float) or not isinstance(ended, int | float):
        return
    start = max(0.0, began - launched - waited)
    result["seconds"] = {
        "waited": round(waited, 2),
        "start": round(start, 2),
        **seconds,
        "exit": round(max(0.0, finished - ended), 2),
    }


def _spent(captures: dict[str, dict]) -> str:
    """Where the compiles' time went, for the progress line: each fresh compile's wall time and, inside it, any
    wait for the GPU, its process's start, the capture's imports, task (model, inputs, an eager call) and compile,
    and its process's exit; `cached` or `stopped` for the others."""
    parts = []
    for mode, captured in captures.items():
        seconds = captured.get("seconds") or {}
        if "wall_s" in captured:
            shown = {stage: value for stage, value in seconds.items() if stage != "waited" or value >= 0.05}
            inside = ", ".join(f"{stage} {value:.1f}" for stage, value in shown.items())
            spare = ", in a spare process" if captured.get("spare") else ""
            parts.append(f"{mode} compile {captured['wall_s']:.1f} s{spare}" + (f" ({inside})" if inside else ""))
        elif captured.get("stopped"):
            parts.append(f"{mode} compile stopped")
        elif "error" not in captured:
            parts.append(f"{mode} compile cached")
    return "; ".join(parts)


def _failure_as_error(extra: Future, default_ok: bool, what: str) -> dict:
    """A templates or tuned capture; where it failed (time, memory) and the default one did not, that failure as
    the capture's error, so the default capture's candidates still go ahead."""
    try:
        return extra.result()
    except BackendError as exc:
        if not default_ok:
            raise
        return {"error": f"Inductor's {what} compile failed: {exc}"}


def _plan(captures: dict[str, dict]) -> list[_Planned]:
    """The variants worth verifying for these captures, best first. The default capture's first own-kernel
    variant and its hybrid always rank below HYBRID_RANK, so they can be handed over before the templates
    compile ends."""
    default = captures.get("default", {})
    templates = captures.get("templates", {"error": "not captured"})
    default_ok, templates_ok = "error" not in default, "error" not in templates
    if default_ok and not uses_library(default):
        return _plan_own_kernels(captures)
    hybrid = [_Planned("default", Variant(HYBRID, hybrid=True))] if default_ok else []
    own, own_fallback = _own_kernels(default)
    early = [*own[:1], *hybrid]
    if not templates_ok:
        return [*early, *own[1:], *own_fallback]
    if uses_library(templates):
        library = _Planned("templates", Variant("Inductor max-autotune + library call", hybrid=True))
        return [*early, *own[1:], library, *own_fallback]
    if not uses_dot(templates):  # the library op was a pool, now Inductor's own pointwise or reduction Triton
        return [_Planned("templates", Variant(LIBRARY_REWRITTEN)), *early, *own[1:], *own_fallback]
    if templates.get("device") == "cpu":  # Triton's interpreter: no tensor cores, no timing to choose a tile by
        return [_Planned("templates", Variant("Inductor max-autotune Triton templates")), *early]
    try:
        tile = matmul_tile(templates)
    except RewriteError:  # the rewrite of this capture fails too, and says why where the candidate is made
        templates_as_made = _Planned("templates", Variant("Inductor max-autotune Triton templates"))
        return [templates_as_made, *early, *own[1:], *own_fallback]
    if tile is None:  # a convolution template, at the configuration Inductor's autotuner chose
        ieee = _Planned("templates", Variant("Inductor max-autotune Triton templates"))
        tf32x3 = _Planned("templates", Variant(TEMPLATES_TF32X3, "tf32x3"), ieee.variant.label)
        return [*early, *own[1:], tf32x3, ieee, *own_fallback]
    captured = _Planned("templates", Variant(f"Inductor max-autotune template, IEEE fp32, {_describe(tile)}"))
    if all(tile.get(key) == value for key, value in IEEE_TILE.items()):
        ieee, captured_if_other = captured, []
    else:
        label = f"Inductor max-autotune template, IEEE fp32, {_describe(IEEE_TILE)}"
        ieee, captured_if_other = (
            _Planned("templates", Variant(label, tile=IEEE_TILE), captured.variant.label),
            [captured],
        )
    tf32x3 = [
        _Planned(
            "templates",
            Variant(f"Inductor max-autotune template, tf32x3, {_describe(tile)}", "tf32x3", tile),
            ieee.variant.label,
        )
        for tile in TF32X3_TILES
    ]
    lead = [tf32x3[0], *early, tf32x3[1]] if own else [*tf32x3[:2], *hybrid]
    return [*lead, ieee, *own[1:], *tf32x3[2:], *captured_if_other, *own_fallback]


def _plan_own_kernels(captures: dict[str, dict]) -> list[_Planned]:
    """Inductor's kernels where they call no library: tuned, as they are, with looped reductions (tuned), each only
    where its kernels differ from those before it. The default kernels rank second at most, so they can be handed
    over before the other compiles end."""
    planned = [_Planned("default", Variant())]
    tuned, looped = captures.get("tuned", {"error": ""}), captures.get("looped", {"error": ""})
    if "error" not in tuned and not _same_kernels(tuned, captures["default"]):
        planned.insert(0, _Planned("tuned", Variant(TUNED)))
    if "error" not in looped and not any(_same_kernels(looped, captures[p.mode]) for p in planned):
        planned.append(_Planned("looped", Variant(LOOPED)))
    return planned


def _same_kernels(one: dict, other: dict) -> bool:
    """Whether two captures launch the same kernels: the same reduction strategies at the same configurations."""
    kinds = [HEURISTIC.findall(captured["wrapper"]) for captured in (one, other)]
    return one["configs"] == other["configs"] and kinds[0] == kinds[1]


def _own_kernels(default: dict) -> tuple[list[_Planned], list[_Planned]]:
    """The default capture with the project's kernels in place of its library convolutions and matmuls, at each
    tile, and the IEEE variant they fall back to (none on the CPU, where one variant is enough: nothing times the
    tiles there)."""
    if "error" in default:
        return [], []
    convolution, matmul = uses_library_convolution(default), uses_library_matmul(default)
    if not convolution and not matmul:
        return [], []

    def planned(conv: dict, mm: dict, fallback: str | None = None) -> _Planned:
        conv, mm = (conv if convolution else None), (mm if matmul else None)
        return _Planned("default", Variant(_describe_own(conv, mm), conv=conv, matmul=mm), fallback)

    fallback = planned(OWN_CONV_IEEE, OWN_MATMUL_IEEE)
    on_cpu = default.get("device") == "cpu"
    tiles = list(zip(OWN_CONV_TILES, OWN_MATMUL_TILES))[: 1 if on_cpu else None]
    own = [planned(conv, mm, fallback.variant.label) for conv, mm in tiles]
    return own, [] if on_cpu else [fallback]


def _describe_own(conv: dict | None, matmul: dict | None = None) -> str:
    """The label of the default capture with the project's kernels: which, their dots' precision and tiles."""
    tiles = [tile for tile in (conv, matmul) if tile]
    precision = "IEEE fp32" if tiles[0]["precision"] == "ieee" else tiles[0]["precision"]
    if conv and matmul:
        return f"{OWN_CONV} and matmul kernel, {precision}, {_describe(conv)}; matmul {_describe(matmul)}"
    return f"{OWN_CONV if conv else OWN_MATMUL}, {precision}, {_describe(tiles[0])}"


def _describe(tile: dict) -> str:
    return (
        f"BLOCK {tile['BLOCK_M']}x{tile['BLOCK_N']}x{tile['BLOCK_K']}, "
        f"{tile['num_warps']} warps, {tile['num_stages']} stages"
    )


def _cache_key(task_source: bytes, device: str, mode: str, dynamic: str | None = None) -> str:
    digest = hashlib.sha256(task_source)
    versions = (metadata.version("torch"), metadata.version("triton"), str(CAPTURE_FORMAT))
    for part in (device, mode, *versions, *([f"dynamic={dynamic}"] if dynamic else [])):
        digest.update(b"\0" + part.encode())
    return digest.hexdigest()[:32]


class _Unneeded(threading.Event):
    """Set once a capture's result is no longer needed, with the reason why."""

    reason = ""

    def set_because(self, reason: str) -> None:
        self.reason = reason
        self.set()


class _Either:
    """A capture's stop signal: the conversion is over for its caller, or (the templates compile) its result is
    no longer needed."""

    def __init__(self, stopped: Callable[[], bool], unneeded: _Unneeded | None = None):
        self.stopped, self.unneeded = stopped, unneeded

    def is_set(self) -> bool:
        return self.stopped() or (self.unneeded is not None and self.unneeded.is_set())
