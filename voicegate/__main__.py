"""`python -m voicegate` runs the command-line interface."""

from voicegate.cli.main import main

raise SystemExit(main())
