"""``python -m paiju.terminal.client play|watch ...``."""

import sys

from paiju.terminal.client.app import main

if __name__ == "__main__":
    sys.exit(main())
