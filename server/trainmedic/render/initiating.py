"""The initiating rank in words, alike in the terminal, hovers and the results panel: the rank,
the host it ran on (so the node can be drained), and how it was chosen. A rank is said to have
failed first only when its basis orders the ranks."""

from __future__ import annotations

from trainmedic.model import Basis, Diagnosis

BASIS_WORDS = {
    Basis.FIRST_ROOT_CAUSE: "its root-cause error came before any other rank's",
    Basis.EXITED_BY_ITSELF: "the launcher saw it end by itself and then stopped the others",
    Basis.NAMED_BY_PEERS: "the other ranks name it in their collective-mismatch reports",
    Basis.LAGGING_SEQUENCE: "its collective sequence number lags the other ranks'",
    Basis.MISSING_FROM_REPORTS: "it is the one rank missing from the others' timeout reports",
    Basis.ONLY_RANK_IN_INPUT: "the only rank in this input, so whether it started the failure "
                              "is not known",
    Basis.ALL_RANKS_ALIKE: "every rank failed alike, so no single rank started it",
    Basis.UNDETERMINED: "this input does not show which rank failed first",
}


def initiating_who(diagnosis: Diagnosis) -> str:
    """"2", "2 on host node-3", or "not determined"."""
    rank = diagnosis.initiating_rank
    if rank is None:
        return "not determined"
    host = diagnosis.initiating_host
    return f"{rank} on host {host}" if host else str(rank)


def basis_words(diagnosis: Diagnosis) -> str:
    """How the initiating rank was chosen (or why none was), in words."""
    return BASIS_WORDS[diagnosis.initiating_basis]
