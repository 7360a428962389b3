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
