"""``python -m ssemock``: the command line."""

from .commands.cli import main

raise SystemExit(main())
