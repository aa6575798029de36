"""``python -m genkit_sessions_conformance --store module:factory [--profile P] [--json F] [--junit-xml F]``."""

import sys

from genkit_sessions_conformance.cli import main

sys.exit(main())
