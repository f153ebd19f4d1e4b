"""``python -m doxa.server`` runs the CLI."""

from doxa.server.cli import main

raise SystemExit(main())
