"""`python -m model_server ...`: the `tritonize` command (what the language server starts as its child)."""

import sys

from model_server.cli import add_parser
from verifier.cli import main

sys.exit(main(package=add_parser))
