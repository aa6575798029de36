"""``python -m conformance --store module:factory [--profile reject|walk-back] [--json F] [--junit-xml F]``."""

import sys

from conformance.cli import main

sys.exit(main())
