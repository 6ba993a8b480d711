"""Which matcher backend runs: the native one when installed, else pure Python."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the matchers are imported when one is built
    from trainmedic.catalogue.rules import Catalogue
    from trainmedic.matching.python import Matcher

BACKENDS = ("auto", "python", "hyperscan")


class BackendError(Exception):
    """A backend was asked for by name but cannot run here."""


def matcher_for(catalogue: Catalogue, backend: str = "auto") -> Matcher:
    """The matcher for `backend`; "auto" takes Hyperscan when it is installed."""
    from trainmedic.matching import hyperscan as fast
    from trainmedic.matching.python import Matcher

    if backend == "python" or (backend == "auto" and not fast.available()):
        return Matcher(catalogue)
    if not fast.available():
        raise BackendError("the hyperscan backend is not installed "
                           "(pip install 'trainmedic[fast]')")
    return fast.HyperscanMatcher(catalogue)


def unsupported(pack: Catalogue) -> str | None:
    """Why the native backend, when installed, cannot run `pack` (a rule pack), or None.

    Validation keeps patterns within what both backends accept; this catches what it misses,
    so that such a pack is refused (or, in the server, left out) rather than failing every
    diagnosis.
    """
    from trainmedic.matching import hyperscan as fast

    if not fast.available():
        return None
    found = fast.refused(pack)
    if found is None:
        return None
    rule_id, reason = found
    return f"rule {rule_id}: the hyperscan backend cannot compile its pattern ({reason})"
