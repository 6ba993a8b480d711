"""Failures no rule explains: what ended the run is listed, handled exceptions are not."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from shared_files import MISSING, case_id, healthy_logs, need

from trainmedic.catalogue.load import bundled
from trainmedic.catalogue.rules import Catalogue
from trainmedic.diagnosis.engine import diagnose, diagnose_text
from trainmedic.logs.inputs import opened
from trainmedic.lsp.conversions import UNEXPLAINED, LineMap, publishable
from trainmedic.model import Diagnosis, RankStatus
from trainmedic.render.json import to_dict
from trainmedic.render.markdown import diagnosis_markdown
from trainmedic.render.text import render_text

CATALOGUE = bundled()
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "unexplained"

# A collate function reading a column the dataset does not have: a user's bug, which no rule of
# the catalogue explains.
NO_GRAD = """\
Traceback (most recent call last):
  File "train.py", line 189, in train
    batch = next(batches)
  File "/home/user/proj/data.py", line 41, in collate
    labels = torch.stack([item["label_ids"] for item in items])
KeyError: 'label_ids'
"""
# A metrics logger that failed to parse a server reply, caught and printed by the script.
LOGGED = """\
Traceback (most recent call last):
  File "/home/user/proj/train.py", line 88, in log_metrics
    payload = json.loads(response.text)
  File "/usr/lib/python3.10/json/__init__.py", line 346, in loads
    return _default_decoder.decode(s)
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)
"""


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text("utf-8")


def steps(first: int, count: int, prefix: str = "") -> str:
    return "".join(f"{prefix}step {s} loss={2.0 - s / 1000:.4f} lr=0.0003\n"
                   for s in range(first, first + count))


def failures(text: str, path: str = "train.log", without: str = "") -> Diagnosis:
    """The diagnosis of `text`, by the catalogue less the rule `without` (so that a real
    failure the catalogue explains can stand for one it does not)."""
    catalogue = Catalogue(tuple(r for r in CATALOGUE.rules if r.id != without),
                          CATALOGUE.sources)
    return diagnose_text(text, catalogue, path)


def test_the_exception_that_ended_the_run_is_listed() -> None:
    diagnosis = failures(steps(1, 5) + NO_GRAD)
    assert not diagnosis.root_causes
    (failure,) = diagnosis.unexplained
    assert (failure.exception, failure.rank) == ("KeyError", None)
    assert failure.message == "'label_ids'"
    assert (failure.line.path, failure.line.number) == ("train.log", 11)


def test_training_that_goes_on_after_a_traceback_makes_it_handled() -> None:
    assert failures(steps(1, 5) + LOGGED + steps(6, 200)).unexplained == ()
    assert failures(steps(1, 5) + LOGGED + "wandb: Synced 5 W&B file(s)\n").unexplained != ()


def test_a_traceback_followed_by_much_more_output_did_not_end_the_run() -> None:
    chatter = "".join(f"Evaluating shard {n} of 400\n" for n in range(400))
    assert failures(LOGGED + chatter).unexplained == ()


def test_the_launchers_failure_report_settles_a_traceback_far_from_the_end() -> None:
    chatter = "".join(f"[rank0]: Evaluating shard {n} of 400\n" for n in range(400))
    worker = "".join(f"[rank0]: {line}\n" for line in LOGGED.splitlines())
    agent = ("E1129 18:16:52.189000 23057 torch/distributed/elastic/multiprocessing/api.py:1002] "
             "failed (exitcode: 1) local_rank: 0 (pid: 23087) of binary: /opt/venv/bin/python3\n")
    (failure,) = failures(worker + chatter + agent).unexplained
    assert (failure.exception, failure.rank) == ("json.decoder.JSONDecodeError", 0)


def test_exceptions_python_reports_as_handled_are_not_failures() -> None:
    # shared corpus more/beyond/011.log (OptimalScale/LMFlow#471): "Exception ignored in" a
    # destructor
    ignored = fixture("ignored-in-del.log")
    # CPython's logging.Handler.handleError, for a bad format string in a log call
    logging_error = """\
--- Logging error ---
Traceback (most recent call last):
  File "/usr/lib/python3.10/logging/__init__.py", line 1100, in emit
    msg = self.format(record)
  File "/usr/lib/python3.10/logging/__init__.py", line 368, in getMessage
    msg = msg % self.args
TypeError: not all arguments converted during string formatting
Call stack:
  File "/home/user/proj/train.py", line 40, in <module>
    log.info("epoch done", epoch)
Message: 'epoch done'
Arguments: (3,)
"""
    assert failures(steps(1, 5) + ignored).unexplained == ()
    assert failures(steps(1, 5) + logging_error).unexplained == ()


def test_a_chain_is_listed_once_as_its_last_exception() -> None:
    text = fixture("chained-build.log")
    assert not failures(text).unexplained  # deepspeed-op-build-failed explains it
    (failure,) = failures(text, without="deepspeed-op-build-failed").unexplained
    assert (failure.exception, failure.message) == ("RuntimeError",
                                                    "Error building extension 'cpu_adam'")


def test_what_a_rule_explains_is_not_listed() -> None:
    # torch 2.x caching allocator: the cuda-oom rule matches the exception line itself
    oom = fixture("cuda-oom.log")
    diagnosis = failures(oom)
    assert diagnosis.root_causes[0].rule_id == "cuda-oom"
    assert diagnosis.unexplained == ()


def test_a_root_cause_accounts_for_what_came_after_it_but_not_before() -> None:
    oom = ("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 "
           "has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n")
    worker = "".join(f"[rank0]: {line}\n" for line in NO_GRAD.splitlines())
    assert failures(oom + worker).unexplained == ()
    (before,) = failures(worker + oom).unexplained
    assert (before.exception, before.rank) == ("KeyError", 0)


def test_a_worker_exit_is_listed_only_when_nothing_says_why() -> None:
    agent = ("E1129 18:16:52.189000 23057 torch/distributed/elastic/multiprocessing/api.py:1002] "
             "failed (exitcode: 1) local_rank: 0 (pid: 23087) of binary: /opt/venv/bin/python3\n")
    (alone,) = failures(agent).unexplained
    assert (alone.exception, alone.rank) == ("exit code 1", 0)
    (traceback,) = failures(NO_GRAD + agent).unexplained
    assert traceback.exception == "KeyError"
    # torchrun SIGTERMs the others after a failure: their ends are no failures of their own
    sigterm = ("W1129 18:16:52.074000 23057 torch/distributed/elastic/multiprocessing/api.py:1028]"
               " Sending process 23088 closing signal SIGTERM\n"
               "E1129 18:16:52.189000 23057 torch/distributed/elastic/multiprocessing/api.py:1002]"
               " failed (exitcode: -15) local_rank: 1 (pid: 23088) of binary: /opt/venv/bin/python3"
               "\n")
    assert failures(sigterm).unexplained == ()


def test_ranks_first_failure_first_and_one_entry_per_exception() -> None:
    def on(rank: int, text: str) -> str:
        return "".join(f"[rank{rank}]: {line}\n" for line in text.splitlines())

    diagnosis = failures(on(3, NO_GRAD) + on(1, NO_GRAD) + on(2, LOGGED))
    assert [(u.exception, u.rank) for u in diagnosis.unexplained] == [
        ("KeyError", 3), ("json.decoder.JSONDecodeError", 2)]
    assert diagnosis.initiating_rank == 3
    assert "no rule explains" in diagnosis.reason
    assert diagnosis.ranks[3].status is RankStatus.FAILED_FIRST
    assert diagnosis.ranks[3].first_failure == diagnosis.unexplained[0].line


def test_per_rank_files_each_end_with_their_own_failure(tmp_path: Path) -> None:
    files = {0: steps(1, 3) + LOGGED + steps(4, 90), 1: steps(1, 3) + NO_GRAD}
    paths = []
    for rank, text in files.items():
        (tmp_path / "attempt_0" / str(rank)).mkdir(parents=True)
        paths.append(tmp_path / "attempt_0" / str(rank) / "stderr.log")
        paths[-1].write_text(text)
    with opened([str(p) for p in paths]) as streams:
        diagnosis = diagnose(streams, CATALOGUE)
    assert [(u.exception, u.rank) for u in diagnosis.unexplained] == [("KeyError", 1)]


@pytest.mark.parametrize("path", healthy_logs() or [MISSING], ids=case_id)
def test_healthy_runs_list_nothing(path: Path | None) -> None:
    with opened([str(need(path))]) as streams:
        assert diagnose(streams, CATALOGUE).unexplained == ()


def test_json_contract_lists_them_redacted() -> None:
    secret = "token=hf_abcdefghijklmnopqrstuvwxyz0123456789"
    text = NO_GRAD.replace("KeyError: 'label_ids'", f"KeyError: 'label_ids' ({secret})")
    result = to_dict(failures(text), CATALOGUE)
    (entry,) = result["unexplained"]
    assert entry["exception"] == "KeyError"
    assert entry["rank"] is None
    assert entry["evidence"]["path"] == "train.log"
    assert entry["evidence"]["line"] == 6
    assert "hf_abc" not in entry["message"]
    assert "hf_abc" not in entry["evidence"]["text"]
    assert set(result) >= {"initiating_rank", "initiating_reason", "diagnoses", "unexplained",
                           "ranks", "series"}


def test_text_markdown_and_lsp_say_what_the_run_failed_with() -> None:
    diagnosis = failures("[rank2]: step 1 loss=2.0\n" + "".join(
        f"[rank2]: {line}\n" for line in NO_GRAD.splitlines()))
    headline = ("No known root cause; the run failed with: KeyError: 'label_ids' "
                "(rank 2, train.log:7)")
    text = render_text(diagnosis, CATALOGUE)
    assert text.startswith(headline + "\n")
    assert "No root cause found." not in text
    assert "No known root cause; the run failed with:" in diagnosis_markdown(diagnosis, CATALOGUE)
    published = publishable(diagnosis, CATALOGUE, "file:///train.log",
                            LineMap("x\n" * 8, types.Position(line=0, character=0)), "hint")
    (warning,) = [d for d in published.diagnostics if d.code == UNEXPLAINED]
    assert warning.severity == types.DiagnosticSeverity.Warning
    assert warning.source == "trainmedic"
    assert warning.range.start.line == 6
    assert warning.message == headline


def test_a_paste_that_starts_below_the_header_still_counts() -> None:
    # shared corpus more/beyond/045.log (LlamaChinese/Llama-Chinese#242): the selection starts
    # inside DeepSpeed's frames
    pasted = fixture("pasted-below-header.log")
    (failure,) = failures(pasted, "paste.txt", without="backward-no-grad-fn").unexplained
    assert (failure.exception, failure.line.number) == ("RuntimeError", 4)
