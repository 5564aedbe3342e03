"""``python -m tachyflow`` is the same as the ``tachyflow`` command."""

from tachyflow.cli import main

raise SystemExit(main())
