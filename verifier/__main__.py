"""`python -m verifier ...`: the `tritonize` command."""

import sys

from verifier.cli import main

sys.exit(main())
