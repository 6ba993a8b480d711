"""Both benchmark log shapes, small: every backend and any number of jobs give one diagnosis.

The metric-dense shape (Megatron-LM, DeepSpeed and Hugging Face step lines, NCCL INFO, tqdm bars,
five rank-prefix styles) comes from the shared generator; the team's own shape from
bench/make_log.py. Each is a few chunks long, cut into one-chunk pieces, so two workers split it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from shared_files import SHARED, need

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose
from trainmedic.events import parallel
from trainmedic.matching import hyperscan as fast
from trainmedic.matching.choice import matcher_for
from trainmedic.render.json import to_dict

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = bundled()
BACKENDS = ["python", *(["hyperscan"] if fast.available() else [])]


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("shapes")
    dense, own = folder / "metric-dense.log", folder / "own.log"
    generator = need(SHARED / "bench" / "make_metric_dense_log.py")
    subprocess.run([sys.executable, str(generator), str(dense), "--size-mib", "3",
                    "--ranks", "64"], check=True)
    subprocess.run([sys.executable, str(ROOT / "bench" / "make_log.py"), str(own), "3"],
                   check=True, stdout=subprocess.DEVNULL)
    return {"metric-dense": dense, "own": own}


def _answer(path: Path, backend: str, jobs: int) -> dict[str, object]:
    with path.open("rb") as stream:
        return to_dict(diagnose([(str(path), stream)], CATALOGUE,
                                matcher_for(CATALOGUE, backend), jobs=jobs), CATALOGUE)


@pytest.mark.parametrize("shape", ["metric-dense", "own"])
def test_every_backend_and_job_count_gives_one_diagnosis(
        shapes: dict[str, Path], shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "PIECE_CHUNKS", 1)
    expected = _answer(shapes[shape], "python", 1)
    assert expected["diagnoses"]  # a failed run: something was found
    for backend in BACKENDS:
        for jobs in (1, 2):
            assert _answer(shapes[shape], backend, jobs) == expected, (backend, jobs)
