"""The model server's commands for `tritonize`: `convert` (the loop, in-process) and `serve` (the HTTP API)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from model_server import api
from verifier.cli import (
    EXIT_FAIL,
    EXIT_PASS,
    add_device_option,
    add_timeout_option,
    interrupted,
    interrupted_exit_code,
    positive_int,
    usage_error,
)

HYBRID_ONLY = (
    "only a hybrid kernel (a library call does part of the work) was correct, which the strict policy refuses; "
    "pass --policy hybrid to accept it"
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """`tritonize convert` and `tritonize serve`."""
    _add_convert(subparsers)
    _add_serve(subparsers)


def _add_convert(subparsers: argparse._SubParsersAction) -> None:
    convert = subparsers.add_parser(
        "convert",
        help="turn a PyTorch task into a verified Triton kernel",
        description="Generate Triton candidates for TASK (a KernelBench-style module), verify each one against "
        "it, feed failures back for repair, and write the fastest correct candidate. Exit 0 when a verified "
        "candidate was written, 1 when none was correct, 2 for bad usage or a broken task.",
    )
    convert.add_argument("task", metavar="TASK", help="task file defining Model, get_inputs() and get_init_inputs()")
    _add_shared_options(convert)
    convert.add_argument(
        "--samples", type=positive_int, default=4, metavar="N", help="candidates per round (default: 4)"
    )
    convert.add_argument(
        "--rounds",
        type=positive_int,
        default=2,
        metavar="R",
        help="rounds; a repair round runs only when the previous one had failures (default: 2)",
    )
    convert.add_argument(
        "--out", metavar="FILE", help="where to write the best kernel (default: TASK_triton.py beside the task)"
    )
    convert.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    convert.add_argument(
        "--target-speedup", type=float, metavar="X", help="stop once a candidate is this much faster than eager"
    )
    convert.add_argument(
        "--deadline", type=float, metavar="SECONDS", help="stop starting new work after this many seconds"
    )
    convert.add_argument(
        "--trials", type=positive_int, default=5, metavar="N", help="input sets per verification (default: 5)"
    )
    convert.add_argument(
        "--policy",
        choices=("strict", "hybrid"),
        default=api.POLICY,
        help="as for verify: strict writes only an all-Triton kernel; hybrid may write a library call plus Triton "
        f"when it is the only correct kind or meaningfully faster (default: {api.POLICY})",
    )
    convert.add_argument(
        "--dynamic",
        nargs="?",
        const="auto",
        metavar="SPEC",
        help="write a kernel that accepts other sizes along these dimensions of forward's tensor inputs, verified "
        "at the example sizes and three others: alone or `auto`, every dimension but the innermost that the task "
        "lets vary; `0`, dimension 0 of each input; `x:0,y:1`, those of the named arguments; without it the kernel "
        "is specialised to the example's sizes (default: off)",
    )
    add_timeout_option(convert)
    convert.set_defaults(run=_run_convert)


def _add_serve(subparsers: argparse._SubParsersAction) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="run the model server (HTTP API: /v1/convert, /v1/verify, /v1/models)",
        description="Serve the conversion loop over HTTP. Binds 127.0.0.1 by default; on any other address, "
        "pass --token (or set TRITONIZE_TOKEN) so requests need `Authorization: Bearer <token>`; without one it "
        "refuses to start unless --allow-no-token.",
    )
    _add_shared_options(serve)
    serve.add_argument(
        "--host", default=api.DEFAULT_HOST, metavar="HOST", help=f"address to bind (default: {api.DEFAULT_HOST})"
    )
    serve.add_argument(
        "--port",
        type=positive_int,
        default=api.DEFAULT_PORT,
        metavar="PORT",
        help=f"port (default: {api.DEFAULT_PORT})",
    )
    serve.add_argument(
        "--max-conversions", type=positive_int, default=2, metavar="N", help="conversions at once (default: 2)"
    )
    serve.add_argument(
        "--max-queued", type=int, default=4, metavar="N", help="conversions waiting before 429 (default: 4)"
    )
    serve.add_argument(
        "--token", metavar="T", help="bearer token every endpoint but /health requires (default: $TRITONIZE_TOKEN)"
    )
    serve.add_argument(
        "--allow-no-token",
        action="store_true",
        help="serve on a non-loopback --host without a token (anyone who reaches the port can run conversions)",
    )
    serve.add_argument(
        "--no-spares",
        action="store_true",
        help="inductor backend: start each capture process when its compile starts, instead of keeping spares with "
        "torch and Inductor imported (saves their memory; each conversion waits for the imports)",
    )
    serve.set_defaults(run=_run_serve)


def _add_shared_options(parser: argparse.ArgumentParser) -> None:
    """What both commands share: the backend, where candidates are verified, and how many at once."""
    from model_server.backends import BACKENDS, DEFAULT_MAX_TOKENS
    from model_server.backends.transformers_backend import DTYPE_HELP, DTYPES
    from model_server.prompts import PROFILES

    parser.add_argument(
        "--backend", default="inductor", metavar="NAME", help=f"{', '.join(BACKENDS)} (default: inductor)"
    )
    parser.add_argument(
        "--model",
        metavar="M",
        help="vllm/transformers: a local model directory or hub id; openai: the upstream's model name",
    )
    parser.add_argument(
        "--profile",
        default="autotriton",
        choices=PROFILES,
        metavar="P",
        help=f"prompt profile for model backends: {', '.join(PROFILES)} (default: autotriton)",
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="openai: an OpenAI-compatible server, e.g. http://gpu-box:8000/v1 (default: $OPENAI_BASE_URL)",
    )
    parser.add_argument(
        "--max-tokens",
        type=positive_int,
        default=DEFAULT_MAX_TOKENS,
        metavar="N",
        help=f"model backends: the most tokens of one reply (default: {DEFAULT_MAX_TOKENS})",
    )
    parser.add_argument(
        "--tensor-parallel",
        type=positive_int,
        default=1,
        metavar="N",
        help="vllm: GPUs the model is split over (default: 1)",
    )
    parser.add_argument(
        "--compile",
        action="store_true",
        help="transformers: decode with a static KV cache, compiled on a GPU (the first request of each prompt "
        "length waits for the compile)",
    )
    parser.add_argument(
        "--dtype",
        default="auto",
        choices=DTYPES,
        metavar="D",
        help=f"{DTYPE_HELP} (default: auto)",
    )
    parser.add_argument(
        "--seed-from",
        choices=("inductor",),
        metavar="inductor",
        help="with a model backend: round 1 is the built-in backend's kernels; each later round shows the model "
        "the best verified one with its measured time and asks for a faster one",
    )
    add_device_option(parser)
    parser.add_argument(
        "--workers", type=positive_int, metavar="N", help="verifications at once (default: 4 on a GPU, 2 on a CPU)"
    )


def _backend_config(args: argparse.Namespace):
    from model_server.backends import BackendConfig

    return BackendConfig(
        name=args.backend,
        model=args.model,
        profile=args.profile,
        device=args.device,
        base_url=args.base_url,
        api_key=os.environ.get("OPENAI_API_KEY"),
        tensor_parallel_size=args.tensor_parallel,
        compile=args.compile,
        dtype=args.dtype,
        seed_from=args.seed_from,
        max_tokens=args.max_tokens,
    )


def _run_serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from model_server.app import ServerConfig, create_app
    except ImportError as exc:
        return usage_error("serve", f"{exc.name} is missing; install with `pip install 'tritonize[serve]'`")
    from model_server.backends import BackendError

    token = args.token or os.environ.get("TRITONIZE_TOKEN")
    if args.host not in api.LOOPBACK_HOSTS and not token:
        if not args.allow_no_token:
            return usage_error(
                "serve",
                f"--host {args.host} is reachable from other machines: pass --token T (or set TRITONIZE_TOKEN), "
                "or --allow-no-token to serve conversions to anyone who reaches the port",
            )
        print(
            f"tritonize serve: warning: {args.host} is reachable from other machines and no --token is set",
            file=sys.stderr,
        )
    config = ServerConfig(
        backend=_backend_config(args),
        workers=args.workers,
        token=token,
        max_conversions=args.max_conversions,
        max_queued=max(0, args.max_queued),
        spares=not args.no_spares,
    )
    try:
        app = create_app(config)
    except BackendError as exc:
        return usage_error("serve", str(exc))
    # A conversion in flight is cancelled, not awaited, when the server stops (the editor closed): 1 s of grace.
    uvicorn.run(app, host=args.host, port=args.port, log_level="info", timeout_graceful_shutdown=1)
    return EXIT_PASS


def _run_convert(args: argparse.Namespace) -> int:
    from model_server.backends import BackendError, create_backend
    from model_server.loop import ConvertError, convert
    from verifier import SandboxStartError, Task, TaskError, UsageError, VerifierPool

    task_path = Path(args.task)
    out = Path(args.out) if args.out else task_path.with_name(f"{task_path.stem}_triton.py")
    try:
        task = Task.from_file(task_path)
    except (TaskError, UsageError) as exc:
        return usage_error("convert", str(exc))
    problem = _out_problem(out, task_path, args.force)
    if problem:
        return usage_error("convert", problem)
    try:
        request = api.ConvertRequest(
            task=task.source,
            task_name=task.name,
            samples=args.samples,
            rounds=args.rounds,
            target_speedup=args.target_speedup,
            deadline=args.deadline,
            trials=args.trials,
            timeout=args.timeout,
            policy=args.policy,
            dynamic=args.dynamic,
        )
        backend = create_backend(_backend_config(args))
        with VerifierPool(size=args.workers, device=args.device) as pool:
            print(f"converting {task_path} with the {backend.name} backend on {pool.device}", file=sys.stderr)
            outcome = convert(request, backend, pool, emit=_progress, cancelled=interrupted, origin=task.origin)
    except (TaskError, UsageError, ValueError, SandboxStartError, BackendError, ConvertError) as exc:
        return usage_error("convert", str(exc))
    except KeyboardInterrupt as stop:
        print(f"tritonize convert: stopped ({stop}); nothing written", file=sys.stderr)
        return interrupted_exit_code(stop)
    print(_table(outcome.attempts))
    if outcome.best is None:
        print(f"no candidate was correct ({outcome.stopped}); nothing written", file=sys.stderr)
        for attempt in outcome.attempts:
            print(f"  round {attempt.round}, candidate {attempt.index}: {attempt.report.message}", file=sys.stderr)
        if args.policy == "strict" and any(a.correct for a in outcome.attempts if a.policy == "hybrid"):
            print(HYBRID_ONLY, file=sys.stderr)
        return EXIT_FAIL
    best = outcome.best
    try:
        out.write_text(outcome.kernel)
    except OSError as exc:
        return usage_error("convert", f"cannot write {out}: {exc.strerror or exc}")
    print(_sizes_said(best.dynamic))
    print(f"wrote {out} (round {best.round}, candidate {best.index}: {outcome.why}; {_satisfies(best.policy)})")
    return EXIT_PASS


def _sizes_said(dynamic: str | None) -> str:
    if dynamic is None:
        return "sizes: specialised to the example's inputs (--dynamic writes a kernel for other sizes)"
    return f"sizes: any along {dynamic}, verified at the example's and three others"


def _satisfies(policy: str) -> str:
    if policy == "strict":
        return "it satisfies the strict policy: all Triton"
    return "it satisfies the hybrid policy, not the strict one: `tritonize verify` checks it as hybrid"


def _out_problem(out: Path, task: Path, force: bool) -> str | None:
    """Why the kernel could not be written to `out`, checked before any work starts; None if it can."""
    if out.is_dir():
        return f"--out {out} is a directory; give a file path, e.g. {out / f'{task.stem}_triton.py'}"
    directory = out.parent
    if not directory.is_dir():
        missing = "is not a directory" if directory.exists() else "does not exist"
        return f"cannot write --out {out}: the directory {directory} {missing}"
    if not os.access(directory, os.W_OK):
        return f"cannot write --out {out}: the directory {directory} is not writable"
    if out.exists() and not force:
        return f"{out} exists; pass --force to overwrite it or --out to write elsewhere"
    return None


def _progress(event: api.Event) -> None:
    if event["event"] != "done":  # the table below says how it ended
        print(event["text"], file=sys.stderr)


def _table(attempts: list) -> str:
    header = f"{'round':>5} {'cand':>4}  {'verdict':<14} {'max error':>10} {'ms':>9} {'vs eager':>9} "
    header += f"{'vs compile':>10}  what"
    rows = [header, "-" * len(header)]
    for attempt in attempts:
        report = attempt.report
        timing = report.timing or {}
        rows.append(
            f"{attempt.round:>5} {attempt.index:>4}  {report.verdict:<14} {_number(report.max_abs_error, '.2e'):>10} "
            f"{_number(timing.get('candidate_ms'), '.4f'):>9} {_number(timing.get('speedup_vs_eager'), '.2f', 'x'):>9} "
            f"{_number(timing.get('speedup_vs_compile'), '.2f', 'x'):>10}  {_what(attempt)}"
        )
    if not attempts:
        rows.append("(no candidates)")
    return "\n".join(rows)


def _what(attempt) -> str:
    """The candidate's label, marked when a library call does part of its work."""
    hybrid = "[hybrid] " if attempt.policy == "hybrid" else ""
    return f"{hybrid}{attempt.label}" or "-"


def _number(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"
