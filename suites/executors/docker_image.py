"""The docker executor's offline sandbox image, built from this machine's own Python.

No registry is reachable, so the image is not pulled: its root file system is this
interpreter (at its own prefix, whose absolute RUNPATH the binary carries), its
standard library without the parts no candidate needs (tests, tkinter, idle, ensurepip,
the prefix's own site-packages), numpy and scipy from the environment (without their
tests) in the image's site-packages, and the shared libraries ``ldd`` names for all of
them (the dynamic loader included), laid out under the host's /lib, /lib64 and /bin
links. Nothing else: no shell, no package manager, no project source; the harness and
the request enter each container through its sandbox directory, as under bubblewrap.

The rootfs is streamed as a tar (sorted entries, mtime 0, owner root, modes kept) into
``docker import``. Its tag is a sha256 of this recipe and of every input file's name,
mode, size and modification time (``image_tag``), so an image is built once per
distinct input and rebuilt only when the interpreter, numpy, scipy or a library
changes. ``python -m suites.executors.docker_image`` builds it (or says it exists) and
prints the tag.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from dataclasses import dataclass
from typing import BinaryIO, Iterator, Sequence

REPOSITORY = "ratchet-sandbox"
SANDBOX_DIR = "/sandbox"
"""Where each container sees its sandbox directory (the one writable bind)."""
_SKIPPED_STDLIB = frozenset({"test", "tests", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3",
                             "site-packages", "pydoc_data", "venv", "distutils"})
_SKIPPED_DIRS = frozenset({"tests", "test"})
_PACKAGES = ("numpy", "scipy")
"""Packages of the environment a candidate may import (each with its ``<name>.libs``):
what the built-in suites' programs import (circle_packing's seed calls scipy's linprog)."""
_EMPTY_DIRS = ("/etc", "/proc", "/sys", "/dev", "/tmp", SANDBOX_DIR)
_LDD = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


@dataclass(frozen=True)
class Layout:
    """Where the interpreter lives, inside the image as on the host."""

    prefix: str
    executable: str
    stdlib: str
    site_packages: str


def layout() -> Layout:
    """This interpreter's layout; the image's site-packages is its prefix's own."""
    prefix = os.path.realpath(sys.base_prefix)
    executable = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
    return Layout(prefix, executable, stdlib, os.path.join(stdlib, "site-packages"))


def _walk(top: str, skip: frozenset[str]) -> Iterator[str]:
    """Files and symlinks under ``top``, skipping directories named in ``skip``."""
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in skip)
        for name in sorted(files):
            yield os.path.join(root, name)


def _package_dirs() -> list[str]:
    """The environment's copies of ``_PACKAGES`` and their bundled libraries."""
    import importlib.util

    found = []
    for name in _PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError(f"{name} is not installed in this environment, so the sandbox image cannot hold it")
        package = os.path.realpath(list(spec.submodule_search_locations)[0])
        found += [package] + [p for p in (package + ".libs",) if os.path.isdir(p)]
    return found


def _shared_libraries(binaries: Sequence[str]) -> list[str]:
    """Every library ``ldd`` names for ``binaries`` (paths as ldd prints them)."""
    libraries: set[str] = set()
    for start in range(0, len(binaries), 200):
        done = subprocess.run(["ldd", *binaries[start : start + 200]], capture_output=True, text=True)
        libraries.update(_LDD.findall(done.stdout))
    return sorted(libraries)


@functools.lru_cache(maxsize=None)
def manifest() -> dict[str, str]:
    """Image path -> host path of every file of the rootfs (libraries by the names the
    loader looks for; symlinks among them are added as links by ``_entries``)."""
    where = layout()
    files: dict[str, str] = {where.executable: where.executable}
    for path in _walk(where.stdlib, _SKIPPED_STDLIB):
        if "_tkinter" not in os.path.basename(path):
            files[path] = path
    for package in _package_dirs():
        for path in _walk(package, _SKIPPED_DIRS):
            files[os.path.join(where.site_packages, os.path.relpath(path, os.path.dirname(package)))] = path
    binaries = [host for host in files.values() if host.endswith(".so") or ".so." in host or host == where.executable]
    for library in _shared_libraries(binaries):
        if not library.startswith(tuple(os.path.dirname(p) for p in _package_dirs())):
            files[library] = library
    return files


def _entries(files: dict[str, str]) -> list[tuple[tarfile.TarInfo, str | None]]:
    """The rootfs as sorted tar entries, each with the host file to copy (None for a
    link or a directory): the top-level links (/lib -> usr/lib ...) as on the host,
    parent directories, then every file (a symlink resolved to a copy)."""
    members: dict[str, tuple[tarfile.TarInfo, str | None]] = {}

    def add_dir(path: str) -> None:
        while path not in ("/", "") and path not in members:
            info = tarfile.TarInfo(path.lstrip("/"))
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            members[path] = (info, None)
            path = os.path.dirname(path)

    links = {top: os.readlink(top) for top in ("/bin", "/sbin", "/lib", "/lib64") if os.path.islink(top)}
    for top, target in links.items():
        info = tarfile.TarInfo(top.lstrip("/"))
        info.type, info.linkname = tarfile.SYMTYPE, target
        members[top] = (info, None)
    for path in _EMPTY_DIRS:
        add_dir(path)
    members["/tmp"][0].mode = 0o1777  # docker's --tmpfs takes the mode of the image's /tmp
    for image_path, host_path in files.items():
        for top, target in links.items():  # /lib/x.so lands at /usr/lib/x.so, under the link
            if image_path.startswith(top + "/"):
                image_path = os.path.join(os.path.dirname(top), target, image_path[len(top) + 1 :])
        add_dir(os.path.dirname(image_path))
        stat = os.stat(host_path)
        info = tarfile.TarInfo(image_path.lstrip("/"))
        info.size, info.mode, info.mtime = stat.st_size, stat.st_mode & 0o755, stat.st_mtime_ns
        members[image_path] = (info, host_path)
    return [members[path] for path in sorted(members)]


@functools.lru_cache(maxsize=None)
def image_tag() -> str:
    """``ratchet-sandbox:<hash>``: the sha256 of this recipe's source and of every
    entry's name, type, mode, link, size and host modification time, so any change of
    an input (a new numpy, a rebuilt interpreter) makes a new tag, and an unchanged
    machine reuses its image without reading the files again."""
    digest = hashlib.sha256(open(__file__, "rb").read())
    for info, host_path in _entries(manifest()):
        digest.update(f"{info.name}\0{info.type!r}\0{info.mode:o}\0{info.linkname}\0{info.size}\0"
                      f"{info.mtime}\0{host_path}\n".encode())
    return f"{REPOSITORY}:{digest.hexdigest()[:16]}"


def write_rootfs(sink: BinaryIO) -> None:
    """Stream the rootfs tar to ``sink``: the same bytes for the same files (entries
    sorted, mtime 0, owner root)."""
    with tarfile.open(fileobj=sink, mode="w|", format=tarfile.GNU_FORMAT) as tar:
        for info, host_path in _entries(manifest()):
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "root", "root"
            if host_path is None:
                tar.addfile(info)
                continue
            with open(host_path, "rb") as handle:
                tar.addfile(info, handle)


def image_exists(docker: list[str], tag: str) -> bool:
    done = subprocess.run([*docker, "image", "inspect", "--format", "{{.Id}}", tag], capture_output=True)
    return done.returncode == 0


def ensure_image(docker: list[str]) -> str:
    """The sandbox image's tag, imported into the engine first (the rootfs streamed into
    ``docker import``) when it lacks it."""
    tag = image_tag()
    if image_exists(docker, tag):
        return tag
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen([*docker, "import", "-", tag], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=errors)
        assert proc.stdin is not None
        try:
            write_rootfs(proc.stdin)
        except BrokenPipeError:
            pass  # docker import ended early; its exit status and stderr say why
        finally:
            proc.stdin.close()
        if proc.wait() != 0:
            errors.seek(0)
            raise RuntimeError(f"`docker import` of the sandbox image {tag} failed: {errors.read().decode().strip()}")
    return tag


def main() -> None:
    from suites.executors.docker import docker_command

    started = time.perf_counter()
    tag = image_tag()
    tagged = time.perf_counter()
    docker = docker_command()
    existed = image_exists(docker, tag)
    ensure_image(docker)
    size = subprocess.run([*docker, "image", "inspect", "--format", "{{.Size}}", tag], capture_output=True, text=True)
    print(f"{tag}: {len(manifest())} files, tagged in {tagged - started:.2f} s; "
          f"{'already in the engine' if existed else f'imported in {time.perf_counter() - tagged:.2f} s'}; "
          f"image size {int(size.stdout) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
