"""A pool of warm sandboxes that verifies many candidates with bounded concurrency, and the one-off `verify`.

A `VerifierPool` owns `size` slots (each a reference zygote and a candidate zygote in their own sandboxes,
see `verification.Slot`), runs that many verifications at once, and shares one timing lock between them;
`gpu_lock` keeps every timing run alone on the GPU, across processes too. Zygotes start on first use and stay
warm between verifications; `warm` starts them ahead and `time_baseline` times a task's baselines ahead, on a GPU
on a slot of their own, so that a conversion's candidates verify beside them.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from verifier.cache import inductor_cache_dir
from verifier.device import resolve_device, visible_gpu
from verifier.errors import Cancelled
from verifier.host import isolation
from verifier.host.verification import Shared, Slot, Verification
from verifier.host.zygote_handle import start_all
from verifier.options import VerifyOptions
from verifier.report import Report
from verifier.task import Task

# GPU memory of one verification (its candidate's and its reference's sandboxes), in multiples of the task's eager
# peak (H100, 2026-11-26, nvidia-smi every 0.5 s: pointwise_conv2d's eager run peaks at 12.3 GiB; its reference's
# sandbox held 12.8-13.9 GB, its template candidates' 33.4 GB and, for a moment, 49.8 GB).
VERIFICATION_FOOTPRINT = 5
USABLE_SHARE = 0.9  # of the GPU's memory: the CUDA contexts and the allocators' slack take the rest
# Verifications at once where the caller leaves it to the pool. On a GPU a conversion's four candidates are checked
# side by side (their timing runs still take turns): 4 against 2 took a median 3.4 s (up to 10 s) off ten
# KernelBench conversions (H200, 2026-11-28). On a CPU each interpreted candidate keeps a core busy.
DEFAULT_SIZE = {"cuda": 4, "cpu": 2}


class VerifierPool:
    """Verify many candidates with bounded concurrency, reusing warm sandboxed zygotes.

    Use as a context manager, or call `close()`; `verify()` is thread-safe and blocks for a free slot.
    """

    def __init__(
        self,
        size: int | None = 1,
        device: str = "auto",
        isolate: bool = True,
        gpu: int | None = None,
        require_isolation: bool = False,
    ):
        """`size`: verifications at once (None: DEFAULT_SIZE for the device). `gpu`: on a machine with several,
        the index (among this process's visible GPUs) of the one the sandboxes use and see alone, e.g. a trainer
        rank's own; None: the default GPU. `require_isolation`: refuse (IsolationError) unless this host gives
        every sandbox layer (`isolation.layers()`)."""
        if require_isolation:
            isolation.require()
        resolved = resolve_device(device)
        self.shared = Shared(resolved, visible_gpu(gpu) if gpu is not None and resolved == "cuda" else None)
        self.isolate = isolate
        self._base = Path(tempfile.mkdtemp(prefix="tritonize-"))
        os.chmod(self._base, 0o700)
        inductor_cache = inductor_cache_dir()
        inductor_cache.mkdir(parents=True, exist_ok=True)
        self._slots = [
            Slot(i, self._base, self.device, isolate, inductor_cache, self.shared.gpu)
            for i in range(max(1, size or DEFAULT_SIZE[resolved]))
        ]
        self._free: queue.Queue[Slot] = queue.Queue()
        for slot in self._slots:
            self._free.put(slot)
        # Baselines (a compile of the task and timings, 10-20 s) on a slot of their own: on a slot of the `size`,
        # one of a conversion's first candidates waited for them (H200, 2026-11-29).
        self._baseline_slot = (
            Slot("baseline", self._base, self.device, isolate, inductor_cache, self.shared.gpu)
            if resolved == "cuda"
            else None
        )
        self._baseline_free = threading.Lock()
        self._closed = False

    @property
    def device(self) -> str:
        """Where candidates run: `cuda`, or `cpu` (Triton's interpreter)."""
        return self.shared.device

    @property
    def size(self) -> int:
        """How many verifications can run at once."""
        return len(self._slots)

    def verify(
        self,
        task: Task,
        candidate: str,
        options: VerifyOptions | None = None,
        *,
        cancelled: Callable[[], bool] | None = None,
        candidate_origin: str = "candidate.py",
        **option_values,
    ) -> Report:
        """Verify a candidate's source against `task`, with `options` (or `VerifyOptions(**option_values)`).

        `cancelled` is polled while jobs run: once it returns true the sandboxes are killed and Cancelled raised.
        `candidate_origin` names the candidate in the report's messages (its path, where it came from a file)."""
        opts = _options(options, option_values)
        with self._slot() as slot:
            if cancelled is not None and cancelled():
                raise Cancelled
            return Verification(slot, self.shared, task, candidate, opts, cancelled, candidate_origin).run()

    def warm(self) -> float:
        """Start the zygotes of every free slot now, all at once (what the first verification on a slot would
        otherwise wait for: importing torch and Triton in each sandbox); the seconds that took. A slot that a
        verification holds is left to it; verifications that want a slot being warmed wait for it."""
        taken: list[Slot] = []
        while True:
            try:
                taken.append(self._free.get_nowait())
            except queue.Empty:
                break
        zygotes = [zygote for slot in taken for zygote in (slot.reference, slot.candidate)]
        baseline = self._baseline_slot is not None and self._baseline_free.acquire(blocking=False)
        try:
            return start_all(zygotes + ([self._baseline_slot.reference] if baseline else []))
        finally:
            if baseline:
                if self._closed:
                    self._baseline_slot.stop()
                self._baseline_free.release()
            for slot in taken:
                if self._closed:  # closed while starting: what started after `close()` stopped the slots
                    slot.stop()
                self._free.put(slot)

    def fitting(self, task: Task) -> int | None:
        """How many verifications of `task` fit on the GPU at once, judged by the peak memory of its eager run
        (measured first thing by `time_baseline`, or with the baseline timings; None before that, or on a CPU). A
        verification holds the task's inputs and outputs several times over: guarded and cloned inputs, the
        candidate's temporaries, the reference's own run."""
        measured = [self.shared.footprints.get(task.digest)]
        measured += [baseline for key, baseline in list(self.shared.baselines.items()) if key[0] == task.digest]
        for footprint in measured:
            if footprint and footprint.get("peak_bytes"):
                usable = USABLE_SHARE * footprint["device_bytes"]
                return max(1, int(usable // (VERIFICATION_FOOTPRINT * footprint["peak_bytes"])))
        return None

    def time_baseline(
        self,
        task: Task,
        options: VerifyOptions | None = None,
        *,
        cancelled: Callable[[], bool] | None = None,
        **option_values,
    ) -> None:
        """Measure the task's eager and torch.compile timings now, on a free slot, for the verifications of the
        task that follow (they reuse them); nothing on a CPU. Options as for `verify`. They run on the pool's
        baseline slot, or, while another task's baselines hold that, on a free slot."""
        opts = _options(options, option_values)
        with self._slot_for_baseline() as slot:
            Verification(slot, self.shared, task, task.source, opts, cancelled).time_baseline()

    @contextlib.contextmanager
    def _slot(self) -> Iterator[Slot]:
        """A free slot (waiting for one), given back afterwards."""
        if self._closed:
            raise RuntimeError("the pool is closed")
        slot = self._free.get()
        try:
            yield slot
        finally:
            self._free.put(slot)

    @contextlib.contextmanager
    def _slot_for_baseline(self) -> Iterator[Slot]:
        if self._baseline_slot is not None and self._baseline_free.acquire(blocking=False):
            try:
                if self._closed:
                    raise RuntimeError("the pool is closed")
                yield self._baseline_slot
            finally:
                self._baseline_free.release()
            return
        with self._slot() as slot:
            yield slot

    def verify_many(self, pairs: Iterable[tuple[Task, str]], **option_values) -> list[Report]:
        """Verify (task, candidate source) pairs concurrently, one per slot; results in input order."""
        with ThreadPoolExecutor(max_workers=len(self._slots)) as executor:
            return list(executor.map(lambda pair: self.verify(*pair, **option_values), pairs))

    def close(self) -> None:
        """Stop every zygote and delete all scratch data."""
        self._closed = True
        try:
            for slot in self._slots + ([self._baseline_slot] if self._baseline_slot else []):
                slot.stop()
        finally:
            shutil.rmtree(self._base, ignore_errors=True)

    def __enter__(self) -> VerifierPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()


def verify(
    task: Task,
    candidate: str,
    device: str = "auto",
    isolate: bool = True,
    require_isolation: bool = False,
    **option_values,
) -> Report:
    """Verify one candidate's source against one task in a one-off pool (see `VerifierPool` for many)."""
    with VerifierPool(size=1, device=device, isolate=isolate, require_isolation=require_isolation) as pool:
        return pool.verify(task, candidate, **option_values)


def _options(options: VerifyOptions | None, values: dict) -> VerifyOptions:
    if options is not None and values:
        raise TypeError(f"pass either options or option values, not both (got {', '.join(values)})")
    return options or VerifyOptions(**values)
