"""trainmedic: diagnose failed ML training runs locally, from logs and training scripts."""

import gc

__version__ = "0.1.0"


class lasting:  # lower case, as `with lasting():` reads (like contextlib.suppress)
    """`with lasting(): import ...`: what the body imports and builds lives as long as the
    process, so the cyclic collector stays off while it is made (collecting while modules load
    runs over them again and again) and it is frozen after (no later collection walks it); the
    collector is then as it was. Here, not in `cli`: the command's own import is one of them."""

    def __enter__(self) -> None:
        self.enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        gc.freeze()
        if self.enabled:
            gc.enable()
