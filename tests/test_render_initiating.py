"""The initiating rank as each renderer says it: its host beside it, and its basis in words
that never claim an order the basis does not give."""

from __future__ import annotations

import pytest

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose_text
from trainmedic.model import Diagnosis
from trainmedic.render.json import to_dict
from trainmedic.render.markdown import diagnosis_markdown
from trainmedic.render.text import render_text

CATALOGUE = bundled()

# corpus more/numerics/020.log (Megatron): only rank 3 is in the input
ONLY_RANK = ("Traceback (most recent call last):\n"
             "  File \"megatron/optimizer/clip_grads.py\", line 78, in clip_grad_norm_fp32\n"
             "AssertionError: Rank 3: found NaN in local grad norm in backwards pass. Device: 3, "
             "node: gpu-node-01\n")
# corpus more/distributed/041.log (hiyouga/LlamaFactory#2206): every rank SIGBUS at once
_ENTRY = ("  time      : 2024-01-16_18:04:01\n  host      : lexun-1\n"
          "  rank      : {0} (local_rank: {0})\n  exitcode  : -7 (pid: 1661{0})\n"
          "  traceback : Signal 7 (SIGBUS) received by PID 1661{0}\n")
ALIKE = ("Failures:\n" + "".join(f"[{r}]:\n" + _ENTRY.format(r) for r in (1, 2, 3))
         + "Root Cause (first observed failure):\n[0]:\n" + _ENTRY.format(0))
# torchrun's summary of one failed worker with its host (the shape of corpus real-a/044.log)
ONE_NODE = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "train.py", line 9, in <module>
[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] \
Read error [10.0.0.3]:12170: Connection reset by peer.
Failures:
[1]:
  time      : 2024-08-20_11:37:36
  host      : node-3
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 793061)  (SIGTERM)
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-08-20_11:37:36
  host      : node-3
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 793062)
"""


def diagnosis_of(text: str) -> Diagnosis:
    return diagnose_text(text, CATALOGUE, "job.log")


def said(diagnosis: Diagnosis) -> tuple[str, str]:
    return render_text(diagnosis, CATALOGUE), diagnosis_markdown(diagnosis, CATALOGUE)


def test_host_beside_the_rank_in_json_text_and_markdown() -> None:
    diagnosis = diagnosis_of(ONE_NODE)
    assert (diagnosis.initiating_rank, diagnosis.initiating_host) == (1, "node-3")
    assert to_dict(diagnosis, CATALOGUE)["initiating_host"] == "node-3"
    text, markdown = said(diagnosis)
    assert "Initiating rank: 1 on host node-3 (" in text
    assert "**Initiating rank:** 1 on host node-3." in markdown
    assert "initiating rank 1 on host node-3" in markdown  # the hover's facts line


@pytest.mark.parametrize(("text", "words"), [
    (ONLY_RANK, "the only rank in this input"),
    (ALIKE, "every rank failed alike"),
])
def test_no_order_claimed_where_the_basis_gives_none(text: str, words: str) -> None:
    diagnosis = diagnosis_of(text)
    for rendered in said(diagnosis):
        assert words in rendered.lower()
        assert "failed first" not in rendered
        assert "failed-first" not in rendered


def test_an_ordered_basis_says_how_in_words() -> None:
    text, markdown = said(diagnosis_of(ONE_NODE))
    assert "its root-cause error came before any other rank's" in text
    assert "Its root-cause error came before any other rank's." in markdown
