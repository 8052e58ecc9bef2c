"""``python -m paiju.botrunner``: the bot runner, with the options of ``paiju bots``."""

import sys

from paiju.botrunner.cli import main

sys.exit(main())
