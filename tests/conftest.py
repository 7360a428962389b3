import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def eval_file(tmp_path):
    """A copy of tests/data/locker (scenario, eval, prompt); returns the eval file."""
    for path in (Path(__file__).parent / "data" / "locker").iterdir():
        shutil.copy(path, tmp_path / path.name)
    return tmp_path / "unit.yaml"


@pytest.fixture(autouse=True)
def _slow_tests_are_marked(request, monkeypatch):
    """`make check` leaves out the tests that start an embedded model (marked `e2e`) and the ones that
    start processes (marked `slow`: mypy, mkdocs, pip, kill-and-resume); an unmarked test doing
    either fails here, so the inner loop stays fast as tests are added."""
    import multiprocessing.process
    import subprocess

    from harness.models import backends

    def refuse(what: str, mark: str):
        def refused(*_args, **_kwargs):
            raise RuntimeError(f"{request.node.nodeid} {what}: mark it @pytest.mark.{mark}")

        return refused

    starts_a_model = request.node.get_closest_marker("e2e") is not None
    if not starts_a_model:
        monkeypatch.setattr(backends, "local_server", refuse("starts an embedded model", "e2e"))
    if not starts_a_model and not request.node.get_closest_marker("slow"):
        monkeypatch.setattr(subprocess.Popen, "__init__", refuse("starts a process", "slow"))
        monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse("starts a process", "slow"))
