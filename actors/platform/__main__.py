"""``python -m actors.platform``: the CLI, as the background start runs it."""

from __future__ import annotations

import sys

from actors.platform.cli import main

sys.exit(main())
