"""``python -m partwire`` is the ``partwire`` command."""

import sys

from partwire.cli import main

sys.exit(main())
