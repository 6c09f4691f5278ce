"""The language server's command for `tritonize`: `tritonize lsp [--tcp HOST:PORT]` (also `python -m lsp_server`)."""

from __future__ import annotations

import argparse

from verifier.cli import usage_error


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """`tritonize lsp`."""
    lsp = subparsers.add_parser(
        "lsp",
        help="run the language server (audit diagnostics and quick fixes; stdio by default)",
        description="Run the tritonize language server for an editor: audit findings as diagnostics on open, "
        "change and save, the audit's fixes as quick fixes, and Convert to Triton / Verify as code actions. "
        "Speaks LSP on stdio unless --tcp is given.",
    )
    add_options(lsp)


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        from lsp_server.server import serve
    except ImportError as exc:
        return usage_error("lsp", f"{exc.name} is missing; install with `pip install 'tritonize[lsp]'`")
    return serve(args.tcp)
