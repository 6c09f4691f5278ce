"""`python -m model_server ...`: the `tritonize` command line (what the language server starts as its child)."""

import sys

from model_server.cli import main

sys.exit(main())
