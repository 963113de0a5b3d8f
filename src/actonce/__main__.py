"""``python -m actonce`` is the ``actonce`` command."""

import sys

from .cli import main

sys.exit(main())
