"""trainmedic: diagnose failed ML training runs locally, from logs and training scripts."""

__version__ = "0.1.0"
