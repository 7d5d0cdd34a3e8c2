"""`python -m bot.cli`, as `python -m bot` and the `aye` command."""

import sys

from bot.cli import main

sys.exit(main())
