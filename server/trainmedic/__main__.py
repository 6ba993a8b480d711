"""`python -m trainmedic` is the `trainmedic` command."""

from trainmedic.cli import main

raise SystemExit(main())
