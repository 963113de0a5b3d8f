"""``python -m actonce`` is the ``actonce`` command."""

import sys

from ._cli import main

sys.exit(main())
