"""``python -m devtools.hostile``: attack a running Home Assistant with Soul."""

import sys

from devtools.hostile.cli import main

if __name__ == "__main__":
    sys.exit(main())
