"""`python -m cuzk.cli ARGS`: the `cuzk` command."""
import sys

from cuzk.cli import main

sys.exit(main())
