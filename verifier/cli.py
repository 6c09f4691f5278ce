"""The `tritonize` command: one parser assembled from each installed package's `add_parser(subparsers)`.

The packages are listed in pyproject.toml under `[project.entry-points."tritonize.commands"]` (verifier:
`verify`, `audit`, `rule`; model_server: `convert`, `serve`; lsp_server: `lsp`), so this module imports nothing above
the verifier; their commands are listed in that order. Where the project is not installed (a bare GPU box
running from a checkout) only the verifier's own commands exist, and those of the package run with
`python -m`. `python -m verifier` and `python -m model_server` are the same command.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

from verifier import interrupts
from verifier.device import DEVICES
from verifier.options import POLICIES

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
TOLERANCE_DEFAULT = "by dtype: fp32 1e-4, fp16/bf16 1e-2, fp64 1e-6"
ENTRY_POINTS = "tritonize.commands"
ORDER = ("verifier", "model_server", "lsp_server")  # entry point names, down the stack first

AddParser = Callable[[argparse._SubParsersAction], None]
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def main(argv: list[str] | None = None, package: AddParser | None = None) -> int:
    """Run `tritonize`; `package` is the `add_parser` of a package run as `python -m package`."""
    parts = installed_parts()
    if package is not None and package not in parts:
        parts.append(package)
    parser = build_parser(parts)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    interrupts.install()
    try:
        return args.run(args)
    except KeyboardInterrupt as stop:
        print(f"tritonize {args.command}: stopped ({stop}); its sandboxes were stopped too", file=sys.stderr)
        return interrupts.exit_code(stop)


def build_parser(parts: list[AddParser]) -> argparse.ArgumentParser:
    """`tritonize` with the commands of `parts`, in that order."""
    parser = argparse.ArgumentParser(
        prog="tritonize",
        description="Convert PyTorch to Triton kernels that are proven equivalent and measured; audit Triton code.",
    )
    parser.add_argument("--version", action="version", version=f"tritonize {version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add_parser in parts:
        add_parser(subparsers)
    return parser


def version(distribution: str = "tritonize") -> str:
    """The installed distribution's version; from a checkout that is not installed, pyproject.toml's."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed_version

    try:
        return installed_version(distribution)
    except PackageNotFoundError:
        pass
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(PYPROJECT.read_text())["project"]["version"]
    except (OSError, tomllib.TOMLDecodeError, KeyError):
        return "unknown"


def installed_parts() -> list[AddParser]:
    """Each package's `add_parser`, from the entry points; the verifier's alone when none are installed."""
    from importlib.metadata import entry_points  # slow to import; `python -m lsp_server` never needs it

    found = sorted(entry_points(group=ENTRY_POINTS), key=lambda e: ORDER.index(e.name) if e.name in ORDER else 99)
    return [entry.load() for entry in found] or [add_parser]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The verifier's commands: `verify`, `audit` and `rule`."""
    _add_verify(subparsers)
    _add_audit(subparsers)
    _add_rule(subparsers)


def _add_verify(subparsers: argparse._SubParsersAction) -> None:
    verify = subparsers.add_parser(
        "verify",
        help="check a Triton candidate against a PyTorch task",
        description="Run TASK (a KernelBench-style module: Model, get_inputs, get_init_inputs) and CANDIDATE "
        "(a module defining ModelNew with @triton.jit kernels) in separate sandboxes, compare their outputs "
        "on fresh random inputs, refuse known reward hacks and, on a GPU, time the candidate against PyTorch "
        "eager and torch.compile. Exit 0 if correct, 1 otherwise, 2 for bad usage or a broken task.",
    )
    verify.add_argument("task", metavar="TASK", help="task file defining Model, get_inputs() and get_init_inputs()")
    verify.add_argument("candidate", metavar="CANDIDATE", help="candidate file defining ModelNew")
    verify.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    add_device_option(verify)
    verify.add_argument("--trials", type=positive_int, default=5, metavar="N", help="random input sets (default: 5)")
    verify.add_argument(
        "--seed", type=int, metavar="S", help="the seed every trial's seed comes from (default: drawn at random)"
    )
    add_timeout_option(verify)
    verify.add_argument(
        "--memory-limit",
        type=_size,
        metavar="SIZE",
        help="resident memory per run, e.g. 4G or 512M (default: 1/4 of RAM)",
    )
    verify.add_argument("--atol", type=float, metavar="X", help=f"absolute tolerance (default: {TOLERANCE_DEFAULT})")
    verify.add_argument("--rtol", type=float, metavar="X", help=f"relative tolerance (default: {TOLERANCE_DEFAULT})")
    verify.add_argument("--no-timing", action="store_true", help="skip GPU timing")
    verify.add_argument("--no-compile-baseline", action="store_true", help="time eager only, not torch.compile")
    verify.add_argument(
        "--timing-trials", type=positive_int, default=100, metavar="N", help="timed calls (default: 100)"
    )
    verify.add_argument(
        "--policy",
        choices=POLICIES,
        help="strict: all the work in Triton, the only policy that earns a reward; hybrid: PyTorch may do the work "
        "Triton does not (e.g. a convolution), reported with Triton's share as `coverage`; `tritonize convert` "
        "writes the policy its kernel satisfies as the file's first line (default: that line's policy, else strict)",
    )
    verify.add_argument(
        "--dynamic",
        metavar="SPEC",
        help="also verify at three other sizes along these dimensions of forward's tensor inputs: `auto` (all but "
        "the innermost), `0` (dimension 0 of each), `x:0,y:1`; `tritonize convert --dynamic` writes the dimensions "
        "its kernel accepts as a `# tritonize-dynamic` line (default: that line's dimensions, else none)",
    )
    verify.add_argument(
        "--sanitize",
        action="store_true",
        help="GPU: once correct, run the candidate once more under compute-sanitizer memcheck, which also sees "
        "out-of-bounds reads (slow)",
    )
    isolation = verify.add_mutually_exclusive_group()
    isolation.add_argument(
        "--require-isolation",
        action="store_true",
        help="refuse to run (exit 2) unless every sandbox layer is available here: bubblewrap's namespaces and "
        "read-only view, the seccomp filter, a memory cgroup",
    )
    isolation.add_argument(
        "--no-isolation", action="store_true", help="run without a sandbox (debugging only; unsafe for untrusted code)"
    )
    verify.set_defaults(run=_run_verify)


def _run_verify(args: argparse.Namespace) -> int:
    from verifier.dynamic import declared_dynamic
    from verifier.errors import SandboxStartError, TaskError, UsageError
    from verifier.host.pool import verify
    from verifier.options import declared_policy
    from verifier.task import Task, read_source

    try:
        candidate = read_source(args.candidate)
        policy = args.policy or declared_policy(candidate) or "strict"
        if args.policy is None and policy == "hybrid":
            print(
                f"tritonize verify: checking under the hybrid policy, as {args.candidate}'s `# tritonize-policy` line "
                "says (--policy strict holds it to all Triton)",
                file=sys.stderr,
            )
        dynamic = args.dynamic or declared_dynamic(candidate)
        if args.dynamic is None and dynamic:
            print(
                f"tritonize verify: also at other sizes along {dynamic}, as {args.candidate}'s `# tritonize-dynamic` "
                "line says",
                file=sys.stderr,
            )
        report = verify(
            Task.from_file(args.task),
            candidate,
            device=args.device,
            isolate=not args.no_isolation,
            require_isolation=args.require_isolation,
            trials=args.trials,
            seed=args.seed,
            timeout=args.timeout,
            memory_limit=args.memory_limit,
            atol=args.atol,
            rtol=args.rtol,
            timing=not args.no_timing,
            timing_trials=args.timing_trials,
            compile_baseline=not args.no_compile_baseline,
            policy=policy,
            sanitize=args.sanitize,
            dynamic=dynamic,
            candidate_origin=args.candidate,
        )
    except (TaskError, UsageError, ValueError, SandboxStartError) as exc:
        return usage_error("verify", str(exc))
    for warning in report.warnings:
        print(f"tritonize verify: warning: {warning}", file=sys.stderr)
    print(report.to_json() if args.json else report.summary())
    return EXIT_PASS if report.passed else EXIT_FAIL


def _add_audit(subparsers: argparse._SubParsersAction) -> None:
    audit = subparsers.add_parser(
        "audit",
        help="report problems in Triton source (static rules and compile checks)",
        description="Audit Triton kernels without running them: language errors, memory safety, numerics, "
        "performance hints and (for ModelNew candidates) the anti-hacking rules; then compile each kernel whose "
        "argument types can be known for a CUDA target, on this machine, GPU or not. Settings come from "
        "[tool.tritonize.audit] in the nearest pyproject.toml; options here override them. Exit 1 if any "
        "error remains, 2 for bad usage.",
    )
    audit.add_argument("paths", nargs="+", metavar="PATH", help="files, or directories to search for *.py")
    audit.add_argument(
        "--format", choices=["text", "json", "sarif"], default="text", help="output format (default: text)"
    )
    audit.add_argument(
        "--select",
        type=_codes,
        metavar="CODES",
        help="rule codes or prefixes to run, comma-separated, e.g. TRI1,TRI201 (default: all)",
    )
    audit.add_argument("--ignore", type=_codes, metavar="CODES", help="rule codes or prefixes to skip, comma-separated")
    audit.add_argument("--target", metavar="SM", help="CUDA target for compile checks, e.g. sm_80 (default: sm_90)")
    audit.add_argument(
        "--compile", action=argparse.BooleanOptionalAction, default=None, help="run compile checks (default: on)"
    )
    audit.add_argument(
        "--compile-timeout",
        type=positive_float,
        metavar="S",
        help="seconds per file for compile checks (default: 120)",
    )
    audit.add_argument(
        "--time-budget", type=positive_float, metavar="S", help="CPU seconds of static analysis per file (default: 1)"
    )
    audit.add_argument(
        "--fix", action="store_true", help="apply the machine-applicable fixes in place, then report what remains"
    )
    audit.set_defaults(run=_run_audit)


def _run_audit(args: argparse.Namespace) -> int:
    from verifier.audit.command import AuditRequest, run_audit

    request = AuditRequest(
        paths=args.paths,
        output_format=args.format,
        select=args.select,
        ignore=args.ignore,
        target=args.target,
        compile=args.compile,
        compile_timeout=args.compile_timeout,
        time_budget=args.time_budget,
        fix=args.fix,
    )
    return run_audit(request)


def _add_rule(subparsers: argparse._SubParsersAction) -> None:
    rule = subparsers.add_parser(
        "rule",
        help="explain a rule: what it finds, why it matters, the fix",
        description="Print the explanation of each rule (its row of docs/RULES.md) as Markdown, as the editor's "
        "hover shows it. Exit 2 for an id that is not a rule.",
    )
    rule.add_argument("rules", nargs="+", metavar="TRI###", help="rule ids, e.g. TRI202")
    rule.set_defaults(run=_run_rule)


def _run_rule(args: argparse.Namespace) -> int:
    from verifier.rule_docs import UnknownRule, explain_rule

    try:
        texts = [explain_rule(rule_id) for rule_id in args.rules]
    except UnknownRule as exc:
        print(f"tritonize rule: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print("\n\n".join(text.markdown() for text in texts))
    return EXIT_PASS


def _codes(text: str) -> tuple[str, ...]:
    codes = tuple(c.strip().upper() for c in text.split(",") if c.strip())
    if not codes:
        raise argparse.ArgumentTypeError("expected comma-separated rule codes such as TRI201")
    return codes


def add_device_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--device",
        choices=DEVICES,
        default="auto",
        help="auto: cuda if a GPU is visible, else cpu, where kernels run in Triton's interpreter (default: auto)",
    )


def add_timeout_option(parser: argparse.ArgumentParser) -> None:
    """`--timeout SECONDS`, shared by `verify` and `convert`: the limit of one sandboxed run."""
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=60.0,
        metavar="SECONDS",
        help="seconds per run of the reference or the candidate; a candidate past it is killed (default: 60)",
    )


def interrupted() -> bool:
    """Whether Ctrl-C or a termination signal asked the running command to stop (long work polls it)."""
    return interrupts.requested()


def interrupted_exit_code(stop: KeyboardInterrupt) -> int:
    """The exit code of a command that a signal stopped (130 for Ctrl-C, 143 for SIGTERM)."""
    return interrupts.exit_code(stop)


def usage_error(command: str, message: str) -> int:
    """One stderr line naming the command and what is wrong; the exit code for bad usage."""
    print(f"tritonize {command}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _size(text: str) -> int:
    units = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    try:
        if text and text[-1] in units:
            return int(float(text[:-1]) * units[text[-1]])
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 4G, 512M or bytes)") from None


if __name__ == "__main__":
    sys.exit(main())
