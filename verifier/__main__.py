import sys

from verifier.cli import main

sys.exit(main())
