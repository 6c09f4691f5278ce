"""The reference's side of a slot (trusted task code): for each call, the task's own output, compared chunk by
chunk on the device with the candidate's outputs as they stream in through the slot's channel
(`compare.LeafCheck`); where they miss only on the size of their errors, the task again in float64 for a second
opinion (`compare.against_exact`); and the eager and torch.compile timings of the task. Everything the candidate's
side sends is untrusted: sizes are checked against the reference's own before a byte is read.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import torch

from verifier.sandbox import compare, rounding, timing
from verifier.sandbox.task_code import (
    StageError,
    build,
    call_inputs,
    collect_garbage,
    describe,
    flatten,
    init_inputs,
    load_task,
    nbytes,
    open_channel,
    optional_call,
    short,
    stage,
    synchronize,
    trial_inputs,
)
from verifier.wire.channel import Channel, ChannelClosed
from verifier.wire.messages import Call, Job, ReferenceResult, TimedReference

FINGERPRINT_MODULUS = 65521
EXACT_OUTPUT_BYTES = 4 * 2**30  # the published cumsum's 4 GiB output still gets its second opinion
EXACT_INPUT_BYTES = 8 * 2**30  # on a CPU; on a GPU, what the device has free (the published matvec's are 8 GiB)
EXACT_MODEL_BYTES = 2 * 2**30
UNTRUSTED_FRAME_ERRORS = (ValueError, TypeError, KeyError, IndexError, RecursionError, OverflowError, RuntimeError)


def run_reference(job: Job) -> ReferenceResult:
    """For each call: the task's output on the call's inputs, compared with what the candidate streams."""
    device = torch.device(job["device"])
    channel = open_channel(job, device)
    module = stage("import", job["source"], lambda: load_task(job["source"], job["module_name"], job["init_seed"]))
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise StageError("import", AttributeError(f"the task defines no `{name}`"), job["source"])
    model = stage("init", job["source"], lambda: build(module.Model, init_inputs(module, job), job, device))
    comparison, repeated = compare.Comparison(), None
    fingerprints: list[tuple[int, int]] = []
    skipped: list[str] = []
    compared, largest = 0, 0
    deadline = time.monotonic() + job["wait_seconds"]
    lost: StageError | None = None  # an optional trial's device-side assert: the GPU context is unusable from then on
    try:
        for call in job["calls"]:
            optional = optional_call(call)
            if lost is not None:
                if not optional:
                    raise lost
                skipped.append(f"{call['label']} skipped: the device was lost in an earlier scaled or resized trial")
                _discard_call(channel, deadline, largest)
                continue
            inputs = stage("get_inputs", job["source"], lambda c=call: call_inputs(module, c, device))
            try:
                with torch.no_grad():
                    run = functools.partial(_forward, model, inputs, device, optional)
                    output = stage("forward", job["source"], run)
            except StageError as exc:
                if not optional:
                    raise
                failure = type(exc.exc).__name__
                skipped.append(f"{call['label']} skipped: the task's own forward failed there ({failure})")
                del inputs, run
                if not _device_usable(device):
                    lost = exc
                _discard_call(channel, deadline, largest)
                continue
            del inputs, run
            structure, ref_leaves = flatten(output)
            largest = max(largest, sum(nbytes(x) for x in ref_leaves))
            channel.mark_ready()
            try:
                check, fingerprint, missed = _receive_call(
                    channel, call["label"], structure, ref_leaves, job, device, deadline
                )
            except UNTRUSTED_FRAME_ERRORS as exc:  # what the candidate's side sent does not make sense
                raise ChannelClosed(f"{type(exc).__name__}: {exc}") from exc
            if optional and not _finite(ref_leaves):
                skipped.append(f"{call['label']} skipped: the task's own output is not finite there")
                del output, ref_leaves, missed
                continue
            if missed:
                check.merge(_second_opinion(missed, model, module, call, device))
            del missed
            if optional:
                check.allclose_tolerance = None  # the benchmarks' harnesses judge their own inputs only
            comparison.merge(check)
            ref_fingerprint = _fingerprint_leaves(ref_leaves, channel.slot_bytes)
            previous = fingerprints[-1] if fingerprints else None
            repeats = previous is not None and fingerprint is not None and fingerprint == previous[0]
            repeats = repeats and ref_fingerprint != previous[1]
            if repeats and call["label"].startswith("trial") and repeated is None:
                repeated = f"{call['label']} returned exactly the previous trial's output although the inputs changed"
            fingerprints.append((fingerprint, ref_fingerprint))
            compared += 1
            del output
            collect_garbage(ref_leaves)
            del ref_leaves
    except (ChannelClosed, TimeoutError) as exc:
        comparison.problems.append(f"the candidate's outputs stopped arriving after {compared} calls ({exc})")
        comparison.allclose_tolerance = math.inf
    return {
        "ok": True,
        "calls_compared": compared,
        "comparison": {
            "max_abs_error": comparison.max_abs_error,
            "max_rel_error": comparison.max_rel_error,
            "allclose_tolerance": comparison.allclose_tolerance,
            "problems": comparison.problems,
            "tolerance": comparison.tolerance,
            "notes": comparison.notes,
        },
        "repeated": repeated,
        "skipped": skipped,
    }


def _finite(leaves: list) -> bool:
    """Whether every floating-point output is finite (a scaled trial where the task overflows says nothing)."""
    return all(bool(torch.isfinite(x).all()) for x in leaves if isinstance(x, torch.Tensor) and x.is_floating_point())


def _forward(model: torch.nn.Module, inputs: list, device: torch.device, optional: bool) -> object:
    """The task's forward; on scaled or resized inputs also waited for, so that a device-side assert it trips (e.g.
    a binary cross-entropy of inputs outside [0, 1]) surfaces here, as this trial's failure."""
    output = model(*inputs)
    if optional:
        synchronize(device)
    return output


def _device_usable(device: torch.device) -> bool:
    """False once a CUDA error is sticky (a device-side assert): every later use of the device fails too."""
    try:
        synchronize(device)
    except Exception:  # torch reports a lost context as RuntimeError or its AcceleratorError subclass
        return False
    return True


def _discard_call(channel: Channel, deadline: float, largest: int) -> None:
    """Let the candidate send one call's outputs (a scaled trial the task itself cannot run), then read and drop
    them, keeping the channel in step; touches no device. `largest`: the bytes of the largest output compared
    so far, which bound what an output may announce (`_output_limit`)."""
    channel.mark_ready()
    limit = _output_limit(largest)
    for cand in _frame_header(channel, deadline)["leaves"]:
        if not isinstance(cand, dict) or cand.get("type") != "Tensor":
            continue
        size = _announced_bytes(cand)
        if size is None or size > limit:
            raise ChannelClosed("an output announces an impossible size")
        channel.skip_bytes(size, deadline)


def _output_limit(reference_bytes: int) -> int:
    """The most bytes a candidate's outputs of one call may announce: 4x the reference's, plus 1 GiB."""
    return 4 * reference_bytes + 2**30


def _frame_header(channel: Channel, deadline: float) -> dict:
    """A call's first frame from the candidate's side: its structure and a description of each output leaf."""
    header = channel.receive_json(deadline)
    if not isinstance(header, dict) or not isinstance(header.get("leaves"), list):
        raise ChannelClosed("a malformed frame header")
    return header


def _receive_call(
    channel: Channel, label: str, structure: object, ref_leaves: list, job: Job, device: torch.device, deadline: float
) -> tuple[compare.Comparison, int | None, list[Missed]]:
    """Read one call's frames from the candidate and compare them: the comparison, the fingerprint of the bytes
    it sent, and the leaves that missed only on the size of their errors (kept for a second opinion, left out
    of the comparison)."""
    header = _frame_header(channel, deadline)
    if "failed" in header:  # the candidate raised where the task ran: nothing follows the header
        failed = str(header["failed"])[:300]
        failure = compare.Comparison(problems=[f"{label}: the candidate's forward failed there ({failed})"])
        failure.allclose_tolerance = math.inf
        return failure, None, []
    result = compare.Comparison(problems=compare.compare_structure(structure, header.get("structure"), label))
    cand_leaves = header["leaves"]
    ref_described = [describe(x) for x in ref_leaves]
    if not result.problems:
        result.problems += compare.compare_devices(
            ref_described, [c if isinstance(c, dict) else {} for c in cand_leaves]
        )
    limit = _output_limit(sum(nbytes(x) for x in ref_leaves))
    keep = _exact_possible(ref_leaves) and not result.problems
    parts: list[torch.Tensor] = []
    missed = []
    for index, cand in enumerate(cand_leaves):
        ref = ref_leaves[index] if index < len(ref_leaves) else None
        name = label if len(ref_leaves) == 1 else f"{label}, output {index}"
        if not isinstance(cand, dict) or cand.get("type") != "Tensor":
            if ref is not None and not result.problems:
                value = cand.get("value") if isinstance(cand, dict) else None
                if isinstance(ref, torch.Tensor):
                    kind = cand.get("type", "nothing") if isinstance(cand, dict) else "nothing"
                    result.merge(compare.Comparison(problems=[f"{name}: expected a torch.Tensor, got {kind}"]))
                else:
                    result.merge(compare.compare_value(ref, value, name))
            continue
        size = _announced_bytes(cand)
        if size is None or size > limit:
            raise ChannelClosed(f"output {index} announces an impossible size")
        check = (
            compare.LeafCheck(ref, name, job.get("atol"), job.get("rtol")) if isinstance(ref, torch.Tensor) else None
        )
        usable = check is not None and not result.problems and check.admits(cand["dtype"], cand["shape"])
        element = ref.element_size() if isinstance(ref, torch.Tensor) else 1
        kept = _room_for(ref) if usable and keep and check.floating else None
        offset = 0
        for chunk in channel.receive_bytes(size, device, deadline):
            parts.append(_fingerprint(chunk))
            if usable:
                values, start = chunk.view(ref.dtype), offset // element
                check.add(start, values)
                if kept is not None:
                    kept[start : start + values.numel()] = values
            offset += chunk.numel()
        if check is not None and not result.problems:
            finished = check.finish()
            if check.near_miss and kept is not None:
                missed.append(Missed(index, check, finished, kept))
            else:
                result.merge(finished)
    if len(cand_leaves) != len(ref_leaves) and not result.problems:
        result.problems.append(f"{label}: {len(cand_leaves)} outputs, expected {len(ref_leaves)}")
    if result.problems:
        for leaf in missed:
            result.merge(leaf.comparison)
        missed = []
        if result.allclose_tolerance is None:
            result.allclose_tolerance = math.inf  # another structure, device or count: nothing to compare
    return result, _fold(parts), missed


@dataclass
class Missed:
    """One output leaf the candidate got right but for the size of its errors, with the values it sent."""

    index: int
    check: compare.LeafCheck
    comparison: compare.Comparison
    values: torch.Tensor


def _room_for(ref: torch.Tensor) -> torch.Tensor | None:
    """A flat buffer like `ref` for the candidate's values, or None where the device has no room for it."""
    try:
        return torch.empty_like(ref).reshape(-1)
    except torch.OutOfMemoryError:
        return None


def _exact_possible(ref_leaves: list) -> bool:
    """Whether a call's outputs are small enough to keep the candidate's copy for a float64 second opinion."""
    return sum(nbytes(x) for x in ref_leaves) <= EXACT_OUTPUT_BYTES


def _second_opinion(
    missed: list[Missed], model: torch.nn.Module, module: ModuleType, call: Call, device: torch.device
) -> compare.Comparison:
    """The missed leaves judged against the task's float64 output on the same inputs, their errors measured once
    (`compare.exact_errors`) and judged (`compare.judge_exact`) first with PyTorch's own fp32 error as the bar,
    then, for a leaf that fails that, with its rounding noise (measured only then: it costs three more float64
    runs); where the task cannot run in float64 (too large, an
    op without float64, a fault) the misses stand."""
    result = compare.Comparison()
    exact, run = _float64_outputs(model, module, call, device)
    noise: list | None = None
    for leaf in missed:
        known = exact is not None and leaf.index < len(exact)
        errors = compare.exact_errors(leaf.check, leaf.values, exact[leaf.index]) if known else None
        if errors is None:
            result.merge(leaf.comparison)
            continue
        judged = compare.judge_exact(leaf.comparison, leaf.check, errors)
        if not judged.passed and run is not None:
            if noise is None:
                unit = max(torch.finfo(m.check.dtype).eps / 2 for m in missed)  # the narrowest float's roundoff
                noise = _rounding_noise(run, exact, unit)
            if leaf.index < len(noise) and noise[leaf.index] is not None:
                judged = compare.judge_exact(leaf.comparison, leaf.check, errors, noise[leaf.index])
        result.merge(judged)
    return result


def _float64_outputs(
    model: torch.nn.Module, module: ModuleType, call: Call, device: torch.device
) -> tuple[list | None, Callable[[], list] | None]:
    """The task's outputs in float64 (a copy of the model, the call's inputs widened) and the function that
    computed them; (None, None) where that is not possible within `EXACT_MODEL_BYTES` and the room for the
    widened inputs, or fails."""
    state = sum(nbytes(t) for t in (*model.parameters(), *model.buffers()))
    if state > EXACT_MODEL_BYTES:
        return None, None
    try:
        inputs = call_inputs(module, call, device)
        if not _room_to_widen(inputs, device):
            return None, None
        wide = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
        del inputs
        wide_model = copy.deepcopy(model).double()

        def run() -> list:
            with torch.no_grad():
                return flatten(wide_model(*wide))[1]

        return run(), run
    except Exception:  # an op with no float64 kernel, memory: the fp32 verdict stands
        return None, None


def _rounding_noise(run: Callable[[], list], exact: list, unit: float) -> list:
    """`rounding.rounding_noise`, or no noise for any leaf where the disturbed runs fail (an op they cannot
    take, memory): PyTorch's own error alone then sets the bar."""
    try:
        return rounding.rounding_noise(run, exact, unit) or []
    except Exception:
        return []


def _room_to_widen(inputs: list, device: torch.device) -> bool:
    """Whether float64 copies of `inputs` fit: on a GPU in 80% of its free memory (a verification beside this
    one must not run out because of it), on a CPU within EXACT_INPUT_BYTES."""
    wide = 2 * sum(nbytes(x) for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point())
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return wide <= 0.8 * free
    return wide <= 2 * EXACT_INPUT_BYTES


def time_reference(job: Job) -> TimedReference:
    """Eager and torch.compile medians on the first call's inputs, measured like the candidate. A `footprint` job
    only calls the task once, eagerly, for its peak GPU memory (how many verifications fit beside each other,
    known in a second instead of after the compile). A `prepare` job only compiles the task and calls it once:
    Inductor's and Triton's caches then hold what the timing run's compile needs, so that compile is short (it
    holds the GPU alone, and everything else waits for it)."""
    device = torch.device(job["device"])
    module = load_task(job["source"], job["module_name"], job["init_seed"])
    model = build(module.Model, init_inputs(module, job), job, device)
    inputs = trial_inputs(module, job["calls"][0]["seed"], device)
    result: TimedReference = {"ok": True}
    if job.get("footprint"):
        with torch.no_grad():
            model(*inputs)
        torch.cuda.synchronize(device)
        result["peak_bytes"] = torch.cuda.max_memory_allocated(device)
        result["device_bytes"] = torch.cuda.get_device_properties(device).total_memory
        return result
    if job.get("prepare"):
        with torch.no_grad(), contextlib.suppress(Exception):  # the timing run reports a compile that fails
            torch.compile(model)(*inputs)
        return result
    with torch.no_grad():
        result["eager"] = timing.time_cuda(lambda: model(*inputs), job["timing_trials"])
        result["peak_bytes"] = torch.cuda.max_memory_allocated(device)
        result["device_bytes"] = torch.cuda.get_device_properties(device).total_memory
        if job.get("compile", True):
            compiled = torch.compile(model)
            started = time.perf_counter()
            try:
                compiled(*inputs)
                result["compile_seconds"] = time.perf_counter() - started
                result["compiled"] = timing.time_cuda(lambda: compiled(*inputs), job["timing_trials"])
            except Exception as exc:  # a baseline that fails to compile is reported, not fatal
                result["compile_error"] = short(f"{type(exc).__name__}: {exc}")
    return result


def _announced_bytes(leaf: dict) -> int | None:
    """The byte size a candidate's leaf description claims, or None if the description is not well formed."""
    shape, dtype = leaf.get("shape"), getattr(torch, str(leaf.get("dtype", "")).removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype) or not isinstance(shape, list):
        return None
    if not all(isinstance(n, int) and n >= 0 for n in shape):
        return None
    return math.prod(shape) * dtype.itemsize


def _fingerprint(chunk: torch.Tensor) -> torch.Tensor:
    """A position-sensitive checksum of a uint8 chunk (tells a repeated output from a fresh one), as two int64
    values left on the chunk's device: a GB-sized output's chunks are folded with one sync (`_fold`)."""
    values = chunk.view(torch.int32) if chunk.numel() % 4 == 0 else chunk
    values = values.to(torch.int64)
    return torch.stack([values.sum(), (values * _weights(values.numel(), values.device)).sum()])


@functools.lru_cache(maxsize=4)
def _weights(count: int, device: torch.device) -> torch.Tensor:
    """The fingerprint's position weights (every full chunk of a GB-sized output has the same count)."""
    return torch.arange(count, device=device) % FINGERPRINT_MODULUS + 1


def _fold(parts: list[torch.Tensor]) -> int:
    """One fingerprint of a sequence of chunk checksums."""
    fingerprint = 0
    for plain, weighted in torch.stack(parts).tolist() if parts else []:
        fingerprint = (fingerprint * 1000003 + (plain * 1000003 + weighted) % 2**61) % 2**61
    return fingerprint


def _fingerprint_leaves(leaves: list, chunk_bytes: int) -> int:
    parts = []
    for leaf in leaves:
        if type(leaf) is torch.Tensor:
            flat = leaf.detach().contiguous().reshape(-1).view(torch.uint8)
            parts += [_fingerprint(flat[start : start + chunk_bytes]) for start in range(0, flat.numel(), chunk_bytes)]
    return _fold(parts)
