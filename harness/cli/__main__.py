"""`python -m harness.cli`: the same as the `harness` command."""

import sys

from . import main

sys.exit(main())
