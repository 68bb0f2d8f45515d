"""``python -m ssemock``: the command line."""

from .cli import main

raise SystemExit(main())
