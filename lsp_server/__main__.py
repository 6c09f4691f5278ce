"""`python -m lsp_server [--tcp HOST:PORT]`: run the language server (stdio by default)."""

import sys

from lsp_server.server import main

sys.exit(main())
