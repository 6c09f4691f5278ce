"""Build training data: RL prompts and verified SFT pairs, from task directories and synthetic tasks.

    python -m training.data --output-dir OUT [--tasks DIR ...] [--harvest LIBRARY ...] [--synthetic N] [flags]

Tasks come from directories of KernelBench modules, from the building blocks of installed libraries
(`training.harvest`: `--harvest LIBRARY` at `--harvest-sizes`) and from `training.synth` (seeded). Each is identified by
the hash of its normalised AST (`training.dedup`): duplicates (the same module up to the names of its own classes and
functions: a library block copied under another family's name) are removed, tasks too close to an evaluation suite
(`--decontaminate DIR|kernelbench:CLONE/levelN|tritonbench-t:CLONE|tritonbench-g:CLONE ...`), by their code or by
computing with the same ops, are dropped and reported per suite, `--shard i/n` keeps the tasks of one share, and a
stable hash of what a task computes puts it in `train`, `val` or `test` (so a block's size tiers share a split).
Written to the output directory:

- `rl.PROFILE.jsonl`: one record per task (no completion), for GRPO and evaluation;
- `sft.PROFILE.jsonl`: one record per task whose Triton, from the built-in `inductor` backend, the verifier found
  correct under the strict policy (the completion: an optional rationale read from the kernel, then the module in
  a ```python block; the verifier's report beside it; `kind` is `convert`). With `--improve` (GPU, `--timing`),
  also one row of `kind` `improve` per task whose fastest verified candidate is at least 1.05x faster than the first
  one to verify: the prompt of `--seed-from inductor` showing that first kernel with its time, the faster kernel as
  the reply (`training.improve`), which then is the `convert` row's kernel too;
- `rl-improve.PROFILE.jsonl` (with `--improve`): one improve prompt per task with a timed verified kernel, that
  kernel as its seed (`seed`, `seed_label`, `seed_ms`), for GRPO's `--prompts improve`;
- `progress.jsonl`: each task's SFT outcome (a re-run on the same directory skips the tasks it lists);
- `datasheet.json`: counts, removals, contamination hits per suite, rejections by verdict and rule, op families;
- `config.yaml`: the resolved arguments.

Prompts come from `model_server/prompts.py`, exactly as serving sends them. Every candidate is verified in the
verifier's sandbox.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import re
import sys
import time
import types
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path

from model_server import prompts
from training import config, harvest, improve, jsonl, suites, synth
from training.dedup import Suite, computation_id, duplicate_key, model_ngrams, task_id
from training.rationale import rationale

IMPROVE_RL = "rl-improve"  # the records of improve prompts, for GRPO: `rl-improve.PROFILE.jsonl`
VARIANTS = 4  # the inductor backend's candidates asked for per task: the first all-Triton one that verifies wins
FAMILY_PATTERNS = {
    "gemm": r"\b(matmul|mm|bmm|linear|Linear|addmm|einsum)\b|@",
    "conv": r"\b[Cc]onv(?:Transpose)?[123]d\b|\bconv(?:_transpose)?[123]d\b",
    "softmax": r"\b(log_)?softmax\b",
    "norm": r"\b(\w+_norm|\w+Norm\w*|rsqrt|normalize)\b",
    "reduction": r"\.(sum|mean|amax|amin|max|min|argmax|argmin|prod|logsumexp|cumsum|norm)\(",
    "activation": r"\b(relu|gelu|silu|sigmoid|tanh|leaky_relu|hardtanh|softplus|elu|mish|selu|hardswish)\b",
    "loss": r"\b(\w+_loss|cross_entropy|kl_div)\b",
}


@dataclass
class DataArgs:
    """What `python -m training.data` builds."""

    output_dir: str = field(default="", metadata={"help": "directory for the JSONL files and the datasheet"})
    tasks: list[str] = field(
        default_factory=list, metadata={"help": "KernelBench task modules: directories of them, or the files"}
    )
    harvest: list[str] = field(
        default_factory=list,
        metadata={"help": f"libraries whose building blocks become tasks: {', '.join(harvest.LIBRARIES)}"},
    )
    harvest_sizes: list[str] = field(
        default_factory=lambda: list(harvest.SIZES),
        metadata={"help": "size tiers of harvested tasks: small, medium, large"},
    )
    synthetic: int = field(default=0, metadata={"help": "how many synthetic tasks to generate"})
    seed: int = field(default=0, metadata={"help": "first synthetic seed (task i uses seed + i)"})
    sizes: str = field(default="small", metadata={"help": "synthetic shapes: small (CPU interpreter) or large"})
    dtypes: list[str] = field(
        default_factory=lambda: ["float32"], metadata={"help": "synthetic dtypes: float32, float16, bfloat16"}
    )
    families: list[str] = field(
        default_factory=lambda: list(synth.FAMILIES),
        metadata={"help": f"synthetic op families: {', '.join(synth.FAMILIES)}"},
    )
    max_ops: int = field(
        default=synth.MAX_OPS, metadata={"help": "most ops in a synthetic task (fewer: shorter kernels)"}
    )
    profiles: list[str] = field(
        default_factory=lambda: ["autotriton"], metadata={"help": "prompt profiles: autotriton, kernelllm, chat"}
    )
    sft: bool = field(default=True, metadata={"help": "build verified SFT pairs (slow: compiles and verifies)"})
    rl: bool = field(default=True, metadata={"help": "write RL prompt records"})
    rationale: bool = field(default=True, metadata={"help": "start each SFT completion with a rationale"})
    device: str = field(default="auto", metadata={"help": "where candidates are generated and verified"})
    val_fraction: float = field(default=0.05, metadata={"help": "share of tasks in the val split"})
    test_fraction: float = field(default=0.05, metadata={"help": "share of tasks in the held-out test split"})
    decontaminate: list[str] = field(
        default_factory=list,
        metadata={
            "help": "evaluation suites: directories of task modules, kernelbench:CLONE/levelN, tritonbench-t:CLONE or "
            "tritonbench-g:CLONE"
        },
    )
    ngram: int = field(default=12, metadata={"help": "token n-gram length for decontamination"})
    overlap: float = field(
        default=0.5,
        metadata={
            "help": "drop a task sharing this share of its n-grams with a suite task; a val or test task sharing "
            "it with a train task moves to train"
        },
    )
    shard: str = field(default="0/1", metadata={"help": "i/n: keep the tasks of share i of n"})
    trials: int = field(default=3, metadata={"help": "verification trials per candidate"})
    timing: bool = field(
        default=False, metadata={"help": "time each kept pair against eager and torch.compile (GPU; slower)"}
    )
    improve: bool = field(
        default=False,
        metadata={
            "help": "also verify and time every all-Triton candidate (GPU, with --timing) and add an improve pair "
            "where one is at least 1.05x faster than the first that verifies: that kernel and its time in the "
            "prompt of --seed-from inductor, the faster one as the reply; and, for GRPO, an improve prompt seeded "
            "with that first kernel for every task that has one (rl-improve.PROFILE.jsonl)"
        },
    )
    timeout: float = field(default=120.0, metadata={"help": "seconds per verification run"})
    workers: int = field(default=2, metadata={"help": "tasks converted and verified at once"})
    max_minutes: float = field(
        default=0.0,
        metadata={"help": "start no conversion after this many minutes (0: no limit); a later run resumes"},
    )

    def __post_init__(self) -> None:
        if not self.output_dir:
            raise ValueError("--output-dir is required")
        unknown = [p for p in self.profiles if p not in prompts.PROFILES]
        if unknown or not self.profiles:
            raise ValueError(f"unknown profile(s) {unknown}; available: {', '.join(prompts.PROFILES)}")
        if not re.fullmatch(r"\d+/[1-9]\d*", self.shard) or int(self.shard.split("/")[0]) >= self.shard_count:
            raise ValueError(f"--shard must be i/n with 0 <= i < n, got {self.shard!r}")
        if min(self.val_fraction, self.test_fraction) < 0 or self.val_fraction + self.test_fraction >= 1:
            raise ValueError("--val-fraction and --test-fraction must be >= 0 and add up to less than 1")
        if self.synthetic < 0 or self.workers < 1 or self.trials < 1 or self.ngram < 1 or self.max_minutes < 0:
            raise ValueError("--synthetic and --max-minutes must be >= 0; --workers, --trials and --ngram at least 1")
        unknown = [name for name in self.harvest if name not in harvest.LIBRARIES]
        if unknown:
            raise ValueError(f"--harvest: no catalogue for {', '.join(unknown)}; known: {', '.join(harvest.LIBRARIES)}")
        if not self.harvest_sizes or any(size not in harvest.SIZES for size in self.harvest_sizes):
            raise ValueError(f"--harvest-sizes must be among {', '.join(harvest.SIZES)}, got {self.harvest_sizes}")
        if self.sizes not in synth.SIZES:
            raise ValueError(f"--sizes must be one of {', '.join(synth.SIZES)}")
        try:
            synth.check(self.sizes, tuple(self.dtypes), tuple(self.families), self.max_ops)
        except ValueError as exc:
            raise ValueError(f"synthetic tasks (--dtypes, --families, --max-ops): {exc}") from exc
        if self.improve and (not self.timing or self.device == "cpu"):
            raise ValueError("--improve orders candidates by measured time: it needs --timing and --device cuda")
        missing = [d for d in self.tasks if not Path(d).is_dir() and not (Path(d).is_file() and d.endswith(".py"))]
        if missing:
            raise ValueError(f"--tasks: neither a directory nor a .py file: {', '.join(missing)}")
        for spec in self.decontaminate:
            try:
                _evaluation_suite(spec, self.ngram)
            except suites.SuiteError as exc:
                raise ValueError(f"--decontaminate: {exc}") from None

    @property
    def shard_index(self) -> int:
        return int(self.shard.split("/")[0])

    @property
    def shard_count(self) -> int:
        return int(self.shard.split("/")[1])


@dataclass(frozen=True)
class Task:
    id: str
    name: str
    source: str
    origin: str
    op_families: tuple[str, ...]
    split: str
    computation: str  # `dedup.computation_id`: the same for one block at each size tier


class DataError(Exception):
    """What the data command cannot do on this machine, said in one line."""


def main(argv: list[str] | None = None) -> int:
    return config.main(DataArgs, build, argv, __doc__, "python -m training.data", refused=(DataError,))


def build(args: DataArgs) -> None:
    """The records, pairs and datasheet the arguments ask for, in their output directory."""
    config.announce(args)
    out = Path(args.output_dir)
    config.save(args, out)
    tasks, sheet = collect(args)
    _log(f"{len(tasks)} tasks kept: {json.dumps(sheet['tasks'])}")
    if args.rl:
        sheet["rl"] = {"records": {profile: write_rl(tasks, profile, out) for profile in args.profiles}}
    if args.sft:
        build_sft(tasks, args, out)
        sheet["sft"] = sft_summary(out, args.profiles)
    sheet["splits"] = dict(collections.Counter(task.split for task in tasks))
    sheet["op_families"] = dict(collections.Counter(f for task in tasks for f in task.op_families))
    sheet["shard"] = args.shard
    (out / "datasheet.json").write_text(json.dumps(sheet, indent=1) + "\n")
    _log(f"wrote {out / 'datasheet.json'}")


# ---------------------------------------------------------------- tasks


def collect(args: DataArgs) -> tuple[list[Task], dict]:
    """The tasks to build from, after duplicates, contamination and sharding; and the counts of each step."""
    counts = collections.Counter()
    found: list[tuple[str, str, str, tuple[str, ...]]] = []  # name, source, origin, families
    for place in map(Path, args.tasks):
        for path in sorted(place.glob("*.py")) if place.is_dir() else [place]:
            source = path.read_text(errors="replace")
            if "class Model" not in source:
                continue
            counts["from_directories"] += 1
            found.append((path.stem, source, str(path), families_of(source)))
    sources = collections.Counter()
    refused: list[harvest.Refusal] = []
    for made in harvest.harvest(args.harvest, args.harvest_sizes, refused):
        counts["harvested"] += 1
        sources[made.library] += 1
        found.append((made.name, made.source, f"harvest:{made.origin}", (made.family,)))
    if refused:
        counts["harvest_refused"] = len(refused)
    for number in range(args.synthetic):
        made = synth.generate(args.seed + number, args.sizes, tuple(args.dtypes), tuple(args.families), args.max_ops)
        counts["synthetic"] += 1
        if degenerate(made.source):
            counts["degenerate"] += 1
            continue
        found.append((made.name, made.source, f"synthetic:{made.seed}", made.op_families))
    against = [_evaluation_suite(spec, args.ngram) for spec in args.decontaminate]
    contaminated = {suite.name: [] for suite in against}
    seen: set[str] = set()
    tasks = []
    for name, source, origin, families in found:
        try:
            identity, duplicate, computation = task_id(source), duplicate_key(source), computation_id(source)
        except SyntaxError:
            counts["unparsable"] += 1
            continue
        if duplicate in seen:
            counts["duplicates_removed"] += 1
            continue
        seen.add(duplicate)
        hit = _contamination(source, against, args.overlap)
        if hit is not None:
            contaminated[hit[0]].append(
                {"id": identity, "origin": origin, "closest": hit[1], "share": hit[2], "by": hit[3]}
            )
            continue
        tasks.append(Task(identity, name, source, origin, families, _split(computation, args), computation))
    tasks, moved = held_out_decontaminated(tasks, args.ngram, args.overlap)  # all shards', so every shard agrees
    sharded = [task for task in tasks if int(task.id, 16) % args.shard_count == args.shard_index]
    if len(sharded) < len(tasks):
        counts["other_shards"] = len(tasks) - len(sharded)
    tasks = sharded
    moved = [move for move in moved if int(move["id"], 16) % args.shard_count == args.shard_index]
    counts["kept"] = len(tasks)
    counts["distinct_computations"] = len({task.computation for task in tasks})
    sheet = {
        "tasks": dict(counts),
        "harvested_by_library": dict(sources),
        "decontamination": {name: {"removed": len(hits), "hits": hits[:50]} for name, hits in contaminated.items()},
        "held_out_decontamination": {
            "ngram": args.ngram,
            "overlap": args.overlap,
            "moved_to_train": len(moved),
            "hits": moved[:50],
        },
    }
    return tasks, sheet


def held_out_decontaminated(tasks: list[Task], n: int, overlap: float) -> tuple[list[Task], list[dict]]:
    """The tasks with every `val` or `test` task that shares `overlap` of its `Model`'s n-grams with a `train` task
    moved to `train`, and a record of each move: a held-out task that is a training task with another constant
    measures memory, not skill."""
    training = [(task.name, model_ngrams(task.source, n)) for task in tasks if task.split == "train"]
    kept, moved = [], []
    for task in tasks:
        grams = model_ngrams(task.source, n) if task.split != "train" else set()
        if grams:
            shares = ((len(grams & theirs) / len(grams), name) for name, theirs in training)
            share, closest = max(shares, default=(0.0, ""))
            if share >= overlap:
                moved.append({"id": task.id, "split": task.split, "closest": closest, "share": round(share, 3)})
                task = replace(task, split="train")
        kept.append(task)
    return kept, moved


def families_of(source: str) -> tuple[str, ...]:
    """The op families a task's source mentions (`elementwise` where it names none of the others)."""
    found = tuple(name for name, pattern in FAMILY_PATTERNS.items() if re.search(pattern, source))
    return found or ("elementwise",)


def degenerate(source: str) -> bool:
    """Whether a synthetic task's output is the same number everywhere (a chain that saturates): nothing to
    learn from, and a constant kernel would pass it. Runs the task, which this module generated itself."""
    import torch

    module = types.ModuleType("synthetic_task")
    exec(compile(source, "synthetic_task", "exec"), module.__dict__)
    torch.manual_seed(0)
    with torch.no_grad():
        output = module.Model(*module.get_init_inputs())(*module.get_inputs()).float()
    return output.numel() > 1 and bool((output == output.flatten()[0]).all())


def _evaluation_suite(spec: str, n: int) -> Suite:
    """A suite to decontaminate against: a directory of task modules, or a benchmark `suites` reads (TritonBench's
    tasks by their reference code: T's PyTorch, G's Triton with its wrapper). A suite with no task it can read is an
    error, not a check that passes everything."""
    if Path(spec).is_dir():
        suite = Suite(Path(spec), n)
    else:
        parsed = suites.parse(spec)
        name = f"{parsed.kind}-{parsed.path.name}"
        sources = None
        if parsed.kind in suites.TRITONBENCH:
            sources = {task.path.name: task.reference for task in suites.tritonbench_tasks(parsed, "simple")}
        suite = Suite(parsed.path, n, name=name, sources=sources)
    if not suite.tasks:
        raise ValueError(f"--decontaminate {spec}: no task there could be read, so nothing would be checked against it")
    return suite


def _contamination(source: str, against: list[Suite], threshold: float) -> tuple[str, str, float, str] | None:
    """(suite, its closest task, the share of n-grams shared, and `source` or `ops`: what was too close) for the first
    suite `source` is too close to: by its code's n-grams, or by computing with the same ops as one of its tasks."""
    for suite in against:
        closest, share = suite.closest(source)
        if closest is not None and share >= threshold:
            return suite.name, closest, round(share, 3), "source"
        same = suite.same_ops(source)
        if same is not None:
            return suite.name, same, round(share, 3), "ops"
    return None


def _split(computation: str, args: DataArgs) -> str:
    draw = int(hashlib.sha256(f"split:{computation}".encode()).hexdigest(), 16) % 10_000 / 10_000
    if draw < args.test_fraction:
        return "test"
    return "val" if draw < args.test_fraction + args.val_fraction else "train"


# ---------------------------------------------------------------- records


def prompt(profile: str, task: str) -> list[dict[str, str]] | str:
    """What the model sees for `task`: the chat messages serving sends, or the raw completion prompt."""
    if profile == "kernelllm":
        return prompts.completion_prompt(profile, task)
    return prompts.messages(profile, task)


def record(task: Task, profile: str) -> dict:
    return {
        "id": task.id,
        "task": task.source,
        "task_origin": task.origin,
        "op_families": list(task.op_families),
        "profile": profile,
        "prompt": prompt(profile, task.source),
        "split": task.split,
    }


def completion(profile: str, candidate: str, with_rationale: bool) -> list[dict[str, str]] | str:
    """The target text: for chat profiles an assistant message (rationale, then the module in a code block);
    for `kernelllm` the module and the closing fence (its prompt already opened the block)."""
    code = candidate.strip() + "\n"
    if profile == "kernelllm":
        return code + "```\n"
    steps = rationale(candidate) if with_rationale else ""
    text = (steps + "\n\n" if steps else "") + f"```python\n{code}```"
    return [{"role": "assistant", "content": text}]


def records_path(out: Path, kind: str, profile: str) -> Path:
    """One file per kind and profile: a chat profile's prompts are messages, `kernelllm`'s are text, and a
    dataset holds one kind of column."""
    return out / f"{kind}.{profile}.jsonl"


def write_rl(tasks: list[Task], profile: str, out: Path) -> int:
    path = records_path(out, "rl", profile)
    partial = path.with_suffix(".tmp")
    with partial.open("w") as f:
        for task in tasks:
            f.write(json.dumps(record(task, profile)) + "\n")
    partial.replace(path)
    return len(tasks)


# ---------------------------------------------------------------- SFT pairs


def build_sft(tasks: list[Task], args: DataArgs, out: Path) -> None:
    """Convert and verify each task not yet in `progress.jsonl`, `args.workers` at a time, appending each
    verified pair to `sft.PROFILE.jsonl` (then its outcome to progress) as soon as it is known. Tasks go in the
    order of their ids (a hash), so a run that `--max-minutes` stops has a fair share of every source."""
    from model_server.backends.inductor import InductorBackend
    from verifier import VerifierPool

    done = _done_ids(out)
    pending = sorted((task for task in tasks if task.id not in done), key=lambda task: task.id)
    _log(f"SFT: {len(pending)} tasks to convert ({len(tasks) - len(pending)} done in an earlier run)")
    backend = InductorBackend()
    started = time.monotonic()
    with (
        VerifierPool(size=args.workers, device=args.device) as pool,
        ThreadPoolExecutor(max_workers=args.workers) as workers,
        contextlib.ExitStack() as files,
    ):
        if args.improve and pool.device != "cuda":
            raise DataError("--improve orders candidates by measured time, and nothing is timed without a GPU")
        pairs = {p: files.enter_context(records_path(out, "sft", p).open("a")) for p in args.profiles}
        improving = args.profiles if args.improve else []
        seeded = {p: files.enter_context(records_path(out, IMPROVE_RL, p).open("a")) for p in improving}
        progress = files.enter_context((out / "progress.jsonl").open("a"))
        futures = {workers.submit(_convert, task, backend, pool, args): task for task in pending}
        deadline = started + args.max_minutes * 60 if args.max_minutes else None
        for number, future in enumerate(as_completed(futures), 1):
            if deadline is not None and time.monotonic() > deadline:
                stopped = sum(other.cancel() for other in futures)
                deadline = None
                if stopped:
                    _log(f"--max-minutes {args.max_minutes:g}: {stopped} tasks left for a later run")
            if future.cancelled():
                continue
            task, outcome = futures[future], future.result()
            if outcome["kept"]:
                for profile, file in pairs.items():
                    pair = record(task, profile)
                    pair["kind"] = "convert"
                    pair["completion"] = completion(profile, outcome["candidate"], args.rationale)
                    pair["report"] = outcome["report"]
                    file.write(json.dumps(pair) + "\n")
                    if "improve" in outcome:
                        file.write(json.dumps(_improve_pair(task, profile, outcome["improve"], args)) + "\n")
                    file.flush()
                    if profile in seeded and "seed" in outcome:
                        seeded[profile].write(json.dumps(_improve_prompt(task, profile, outcome["seed"])) + "\n")
                        seeded[profile].flush()
            line = {k: v for k, v in outcome.items() if k not in ("candidate", "improve", "seed")}
            if "improve" in outcome:
                line["improve"] = improve.summary(*outcome["improve"])
            progress.write(json.dumps({"id": task.id, **line}))
            progress.write("\n")
            progress.flush()
            rate = number / max(time.monotonic() - started, 1e-9) * 60
            _log(f"[{number}/{len(pending)}] {task.name}: {outcome['verdict']} ({rate:.1f} tasks/min)")


def _improve_prompt(task: Task, profile: str, seed: improve.Timed) -> dict:
    """The RL row that shows the seed kernel with its time and asks for a faster one (`training.improve`)."""
    prompt_text = improve.prompt(profile, task.source, seed)
    return {**record(task, profile), "kind": "improve", "prompt": prompt_text, **improve.seed_columns(seed)}


def _improve_pair(task: Task, profile: str, chosen: tuple[improve.Timed, improve.Timed], args: DataArgs) -> dict:
    """The SFT row that shows the seed kernel with its time and answers with the faster one."""
    seed, fastest = chosen
    pair = _improve_prompt(task, profile, seed)
    pair["completion"] = completion(profile, fastest.source, args.rationale)
    return {**pair, **improve.summary(seed, fastest)}


def _convert(task: Task, backend, pool, args: DataArgs) -> dict:
    """The first all-Triton candidate of the backend that verifies correct, or why there is none; with `--improve`,
    every candidate is verified and timed, and where a seed and a faster kernel are chosen, the faster one."""
    from model_server.backends.base import BackendError, GenerationRequest, collect
    from verifier import Task as VerifierTask
    from verifier import TaskError, UsageError

    try:  # named as the candidate's docstring cites it
        checked = VerifierTask.named(task.source, task.name)
        generated, _ = collect(backend, GenerationRequest(checked, VARIANTS, pool.device))
    except (BackendError, TaskError, UsageError) as exc:
        return {"kept": False, "verdict": "not_converted", "rules": [], "message": str(exc)[:500]}
    strict = [g for g in generated if g.policy == "strict"]
    if not strict:
        return {"kept": False, "verdict": "hybrid_only", "rules": [], "message": "only hybrid candidates"}
    tried, verified = [], []
    for number, candidate in enumerate(strict):
        report = pool.verify(
            checked,
            candidate.source,
            candidate_origin=f"candidate_{number}.py",
            trials=args.trials,
            timeout=args.timeout,
            policy="strict",
            timing=args.timing,
        )
        tried.append(report)
        if report.verdict == "correct" and report.reward > 0:
            verified.append((candidate, report))
            if not args.improve:
                break
    if verified:
        timed = [improve.Timed(c.label, c.source, r.timing or {}) for c, r in verified]
        chosen = improve.choose(timed)
        candidate, report = verified[0] if chosen is None else verified[timed.index(chosen[1])]
        outcome = {
            "kept": True,
            "verdict": "correct",
            "rules": [],
            "label": candidate.label,
            "candidate": candidate.source,
            "report": report.to_dict(),
        }
        if chosen is not None:  # the pair of this kind teaches the fastest kernel too
            outcome["improve"] = chosen
        seed = improve.seed_of(timed) if args.improve else None
        if seed is not None:
            outcome["seed"] = seed
        return outcome
    last = tried[-1]
    return {
        "kept": False,
        "verdict": last.verdict,
        "rules": sorted({v["rule"] for r in tried for v in r.violations}),
        "message": last.message[:500],
    }


def sft_summary(out: Path, profiles: list[str]) -> dict:
    """Pairs and rejections over every run on this directory (the SFT files and `progress.jsonl`)."""
    pairs = {profile: jsonl.read(records_path(out, "sft", profile)) for profile in profiles}
    rejected = [o for o in jsonl.read(out / "progress.jsonl") if not o.get("kept")]
    converted = {pair["id"]: pair["task"] for lines in pairs.values() for pair in lines}
    return {
        "tasks_converted": len(converted),
        "distinct_computations_converted": len({computation_id(source) for source in converted.values()}),
        "pairs": {profile: len(lines) for profile, lines in pairs.items()},
        "improve_pairs": {profile: sum(p.get("kind") == "improve" for p in lines) for profile, lines in pairs.items()},
        "improve_prompts": {profile: len(jsonl.read(records_path(out, IMPROVE_RL, profile))) for profile in profiles},
        "rejected_by_verdict": dict(collections.Counter(o["verdict"] for o in rejected)),
        "rejected_by_rule": dict(collections.Counter(rule for o in rejected for rule in o.get("rules", []))),
    }


def _done_ids(out: Path) -> set[str]:
    """Tasks an earlier run on `out` finished (a pair written counts, even where its outcome line was not)."""
    files = [out / "progress.jsonl", *out.glob("sft.*.jsonl")]
    return {line["id"] for path in files for line in jsonl.read(path) if "id" in line}


def _log(text: str) -> None:
    print(f"training.data: {text}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
