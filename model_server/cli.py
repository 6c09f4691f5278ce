"""`tritonize` command line: the verifier's commands plus `convert`, `serve` and `lsp`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from verifier.cli import EXIT_FAIL, EXIT_PASS, EXIT_USAGE, build_parser, positive_int


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    _add_convert(commands)
    _add_serve(commands)
    _add_lsp(commands)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return args.run(args)


def _add_convert(commands: argparse._SubParsersAction) -> None:
    convert = commands.add_parser(
        "convert",
        help="turn a PyTorch task into a verified Triton kernel",
        description="Generate Triton candidates for TASK (a KernelBench-style module), verify each one against "
        "it, feed failures back for repair, and write the fastest correct candidate. Exit 0 when a verified "
        "candidate was written, 1 when none was correct, 2 for bad usage or a broken task.",
    )
    convert.add_argument("task", help="task file defining Model, get_inputs() and get_init_inputs()")
    _add_backend_options(convert)
    convert.add_argument("--samples", type=positive_int, default=4, help="candidates per round (default: 4)")
    convert.add_argument("--rounds", type=positive_int, default=2, help="generate/repair rounds (default: 2)")
    convert.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto", help="default: auto")
    convert.add_argument("--out", help="where to write the best kernel (default: TASK_triton.py beside the task)")
    convert.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    convert.add_argument("--target-speedup", type=float, help="stop once a candidate is this much faster than eager")
    convert.add_argument("--deadline", type=float, help="stop starting new work after this many seconds")
    convert.add_argument("--trials", type=positive_int, default=5, help="input sets per verification (default: 5)")
    convert.add_argument("--workers", type=positive_int, default=2, help="verifications at once (default: 2)")
    convert.set_defaults(run=_run_convert)


def _add_backend_options(parser: argparse.ArgumentParser) -> None:
    from model_server.backends import BACKENDS
    from model_server.prompts import PROFILES

    parser.add_argument("--backend", default="inductor", help=f"{' | '.join(BACKENDS)} (default: inductor)")
    parser.add_argument("--model", help="model directory or hub id (transformers), or model name (openai)")
    parser.add_argument(
        "--profile", default="autotriton", choices=PROFILES, help="prompt profile (default: autotriton)"
    )
    parser.add_argument("--base-url", help="OpenAI-compatible server, e.g. http://gpu-box:8000/v1 (openai backend)")
    parser.add_argument("--tensor-parallel", type=positive_int, default=1, help="GPUs per model (vllm backend)")


def _backend(args: argparse.Namespace):
    from model_server.backends import create_backend

    api_key = os.environ.get("OPENAI_API_KEY")
    return create_backend(
        args.backend, args.model, args.profile, args.device, args.base_url, api_key, args.tensor_parallel
    )


def _add_serve(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser(
        "serve",
        help="run the model server (HTTP API: /v1/convert, /v1/verify, /v1/models)",
        description="Serve the conversion loop over HTTP. Binds 127.0.0.1 by default; on any other address, "
        "pass --token (or set TRITONIZE_TOKEN) so requests need `Authorization: Bearer <token>`.",
    )
    _add_backend_options(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=positive_int, default=8765, help="port (default: 8765)")
    serve.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto", help="default: auto")
    serve.add_argument("--workers", type=positive_int, default=2, help="verifications at once (default: 2)")
    serve.add_argument("--max-conversions", type=positive_int, default=2, help="conversions at once (default: 2)")
    serve.add_argument("--max-queued", type=int, default=4, help="conversions waiting before 429 (default: 4)")
    serve.add_argument("--token", default=os.environ.get("TRITONIZE_TOKEN"), help="bearer token to require")
    serve.set_defaults(run=_run_serve)


def _run_serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from model_server.app import ServerConfig, create_app
    except ImportError as exc:
        print(
            f"tritonize serve: error: {exc.name} is missing; install with `pip install 'tritonize[serve]'`",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from model_server.backends import BackendError

    if args.host not in {"127.0.0.1", "localhost", "::1"} and not args.token:
        print(
            f"tritonize serve: warning: {args.host} is reachable from other machines and no --token is set",
            file=sys.stderr,
        )
    config = ServerConfig(
        backend=args.backend,
        model=args.model,
        profile=args.profile,
        base_url=args.base_url,
        api_key=os.environ.get("OPENAI_API_KEY"),
        tensor_parallel_size=args.tensor_parallel,
        device=args.device,
        workers=args.workers,
        token=args.token,
        max_conversions=args.max_conversions,
        max_queued=max(0, args.max_queued),
    )
    try:
        app = create_app(config)
    except BackendError as exc:
        print(f"tritonize serve: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return EXIT_PASS


def _add_lsp(commands: argparse._SubParsersAction) -> None:
    lsp = commands.add_parser(
        "lsp",
        help="run the language server (audit diagnostics and quick fixes; stdio by default)",
        description="Run the tritonize language server for an editor: audit findings as diagnostics on open, "
        "change and save, and the audit's fixes as quick fixes. Speaks LSP on stdio unless --tcp is given.",
    )
    lsp.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    lsp.set_defaults(run=_run_lsp)


def _run_lsp(args: argparse.Namespace) -> int:
    try:
        from lsp_server.server import main as lsp_main
    except ImportError as exc:
        print(
            f"tritonize lsp: error: {exc.name} is missing; install with `pip install 'tritonize[lsp]'`", file=sys.stderr
        )
        return EXIT_USAGE
    return lsp_main(["--tcp", args.tcp] if args.tcp else [])


def _run_convert(args: argparse.Namespace) -> int:
    from model_server.backends import BackendError
    from model_server.loop import ConvertError, ConvertOptions, convert
    from verifier.pool import VerifierPool, WorkerStartError
    from verifier.verification import TaskError, UsageError

    task = Path(args.task)
    out = Path(args.out) if args.out else task.with_name(f"{task.stem}_triton.py")
    if out.exists() and not args.force:
        return _usage(f"{out} exists; pass --force to overwrite it or --out to write elsewhere")
    try:
        options = ConvertOptions(
            samples=args.samples,
            rounds=args.rounds,
            target_speedup=args.target_speedup,
            deadline=args.deadline,
            trials=args.trials,
        )
        backend = _backend(args)
        with VerifierPool(size=args.workers, device=args.device) as pool:
            print(f"converting {task} with the {backend.name} backend on {pool.device}", file=sys.stderr)
            outcome = convert(task, backend, pool, options, emit=_progress)
    except (TaskError, UsageError, ValueError, WorkerStartError, BackendError, ConvertError) as exc:
        return _usage(str(exc))
    except KeyboardInterrupt:
        print("tritonize convert: interrupted; nothing written", file=sys.stderr)
        return 130
    print(_table(outcome.attempts))
    if outcome.best is None:
        print(f"no candidate was correct ({outcome.stopped}); nothing written", file=sys.stderr)
        return EXIT_FAIL
    out.write_text(outcome.best.source)
    best = outcome.best
    print(f"wrote {out} (round {best.round}, candidate {best.index}: {best.report.verdict})")
    return EXIT_PASS


def _progress(event: dict) -> None:
    kind = event["event"]
    if kind == "round":
        print(f"round {event['round']}: generating up to {event['samples']} candidates", file=sys.stderr)
    elif kind == "candidate":
        error = "" if event["max_abs_error"] is None else f", max err {event['max_abs_error']:.3g}"
        speed = "" if event["speedup_vs_eager"] is None else f", {event['speedup_vs_eager']:.2f}x eager"
        print(
            f"round {event['round']}: candidate {event['index']}/{event['of']} {event['verdict']}{error}{speed}",
            file=sys.stderr,
        )
    elif kind in {"error", "note"}:
        print(f"round {event['round']}: {event['message']}", file=sys.stderr)


def _table(attempts: list) -> str:
    header = f"{'round':>5} {'cand':>4}  {'verdict':<14} {'max error':>10} {'ms':>9} {'vs eager':>9} {'vs compile':>10}"
    rows = [header, "-" * len(header)]
    for attempt in attempts:
        report = attempt.report
        timing = report.timing or {}
        rows.append(
            f"{attempt.round:>5} {attempt.index:>4}  {report.verdict:<14} {_number(report.max_abs_error, '.2e'):>10} "
            f"{_number(timing.get('candidate_ms'), '.4f'):>9} {_number(timing.get('speedup_vs_eager'), '.2f', 'x'):>9} "
            f"{_number(timing.get('speedup_vs_compile'), '.2f', 'x'):>10}"
        )
    if not attempts:
        rows.append("(no candidates)")
    return "\n".join(rows)


def _number(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def _usage(message: str) -> int:
    print(f"tritonize convert: error: {message}", file=sys.stderr)
    return EXIT_USAGE
