"""`python -m trainmedic` is the `trainmedic` command."""

from trainmedic.cli import script

raise SystemExit(script())
