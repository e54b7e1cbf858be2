"""``python -m cli``: the CLI, as the background start runs it."""

from __future__ import annotations

import sys

from cli import main

sys.exit(main())
