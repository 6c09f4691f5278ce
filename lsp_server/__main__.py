"""`python -m lsp_server [--tcp HOST:PORT]`: run the language server (stdio by default)."""

import argparse
import sys

from lsp_server.cli import add_options


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m lsp_server", description="Run the tritonize language server.")
    add_options(parser)
    arguments = parser.parse_args()
    return arguments.run(arguments)


if __name__ == "__main__":
    sys.exit(main())
