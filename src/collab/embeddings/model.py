"""The embedding model, loaded once per process from a local path (never a download).

It runs over an export made offline from the packaged weights and cached under the data dir
(`<cache_dir>/<content hash>/`): on OpenVINO in bf16 where the CPU computes bf16 natively, else on ONNX Runtime in
fp32; torch stays for models without an export.
"""

import hashlib
import logging
import os
import threading
from pathlib import Path
from typing import Any

DEFAULT_NAME = "all-MiniLM-L6-v2"  # what the registry's source "default" loads (databases made before ADR 0062)
log = logging.getLogger("collab.embeddings")


def resolve(setting: str | None) -> tuple[str, str]:
    """(name stored with the vectors, what sentence-transformers loads) for a model setting: a shipped model's
    name (catalog.py; unset: its default), "default" (the fast model, as earlier releases registered it), or any
    sentence-transformers name or local folder."""
    from collab.embeddings import catalog

    if setting == "default":
        setting = catalog.FAST
    name = setting or catalog.DEFAULT
    if name in catalog.MODELS:
        return name, str(catalog.MODELS[name].folder())
    return name.rstrip("/").rsplit("/", 1)[-1], name


class Embedder:
    """A loaded model: name, dimensions, and `encode` returning unit-length vectors.

    `dtype` auto is bf16 on OpenVINO where the CPU computes bf16 natively, else fp32 on ONNX Runtime; fp32 and
    int8 name ONNX Runtime; bf16 is OpenVINO's where native, else torch's. `device` auto picks a GPU for batches
    when one is usable, else the CPU; `runtime` auto uses an export where the model has one and torch otherwise.
    """

    def __init__(self, name: str, source: str, *, device: str = "auto", dtype: str = "auto", runtime: str = "auto",
                 cache_dir: Path | str | None = None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # weights come from a local path, never a hub
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from collab.embeddings import export
        from collab.embeddings.runtime import Tokens, TorchModel, bulk_device, native_bf16

        self.name = name
        self.model: Any = None  # an exported model (ONNX, OpenVINO) or a TorchModel: both encode and answer queries
        asked = dtype
        if dtype == "auto":
            dtype = "bf16" if runtime in ("auto", "openvino") and native_bf16() else "fp32"
        # bf16 asked for where the CPU has none (and OpenVINO not named) stays on torch, as before.
        if runtime != "torch" and (dtype != "bf16" or native_bf16() or runtime == "openvino"):
            folder = export.local_dir(source)
            try:
                if folder is None:
                    raise export.NotExportable("no local copy")
                tokens = Tokens(folder / "tokenizer.json", export.max_length(folder))
                self.model = _exported(folder, tokens, source, device, dtype, _cache_dir(cache_dir))
            except export.NotExportable as why:
                if runtime in ("onnx", "openvino"):
                    raise
                log.info("embedding model %s runs on torch (%s)", name, why)
        if self.model is None:
            # bf16 on torch only when asked for: its vectors drift to 0.998 of fp32 (OpenVINO's: 0.9999).
            self.model = TorchModel(source, device=_torch_device(device, bulk_device),
                                    dtype="bf16" if asked == "bf16" else "fp32")
        self.dimensions = self.model.dimensions

    def encode(self, texts: list[str], *, batch_size: int = 64) -> list[list[float]]:
        """Unit-length embeddings (cosine distance = 1 - dot product)."""
        if not texts:
            return []
        return self.model.encode(list(texts), batch_size=batch_size).tolist()

    def encode_queries(self, texts: list[str]) -> list[list[float]]:
        """Search queries in one pass on the queries' own session (never behind a bulk batch)."""
        if not texts:
            return []
        return self.model.queries(list(texts)).tolist()


def _exported(folder: Path, tokens, source: str, device: str, dtype: str, cache: Path):
    """The exported model on OpenVINO (bf16) or ONNX Runtime (fp32, int8); bf16 that drifts falls back to fp32."""
    from collab.embeddings import export
    from collab.embeddings.runtime import OnnxModel

    if dtype == "bf16":
        plain = export.ensure(folder, cache, "bf16")
        try:
            model = OnnxModel(plain, tokens, source=source, device=device, label="openvino-bf16", openvino=True)
            export.check_bf16(model.query, plain, tokens)
            return model
        except Exception as why:  # drifts, or OpenVINO cannot compile this graph: ONNX Runtime runs it
            log.warning("bf16 refused for %s (%s); using fp32", folder.name, why)
            dtype = "fp32"
    return OnnxModel(export.ensure(folder, cache, dtype), tokens, source=source, device=device, label=f"onnx-{dtype}")


def _cache_dir(given: Path | str | None) -> Path:
    if given:
        return Path(given)
    from collab.config import get_settings

    return get_settings().models_dir


def _torch_device(device: str, bulk_device) -> str:
    return "cuda" if bulk_device(device) != "cpu" else "cpu"


_loaded: dict[tuple[str, str, str, str], Embedder] = {}
_loading = threading.Lock()


def load(setting: str | None = None, name: str | None = None, dtype: str = "auto", *, device: str = "auto",
         cache_dir: Path | str | None = None) -> Embedder:
    """The process-wide embedder for a model setting (loaded on first use, then kept), optionally renamed."""
    default_name, source = resolve(setting)
    key = (name or default_name, source, dtype, device)
    # Keyed by what is loaded (not by how it was asked for), and concurrent first uses wait for the one load.
    with _loading:
        if key not in _loaded:
            _loaded[key] = Embedder(key[0], source, dtype=dtype, device=device, cache_dir=cache_dir)
        return _loaded[key]


def loaded(setting: str | None, name: str | None = None) -> Embedder | None:
    """The process's embedder for a model setting when it is already loaded (no load, no wait): the search path's
    fast way to its model, which a load of another model on the load thread must not hold up."""
    try:
        default_name, source = resolve(setting)
    except Exception:  # a shipped model not assembled yet: the load reports it
        return None
    return _loaded.get((name or default_name, source, "auto", "auto"))


def describe(embedder: Embedder) -> dict[str, Any]:
    """What runs an embedder: its model, runtime (onnx-fp32, openvino-bf16, torch) and where batches run."""
    from collab.embeddings.runtime import bulk_device

    model = embedder.model
    device = getattr(model, "device", "auto")
    try:
        bulk = getattr(model, "bulk_device", None) or bulk_device(device)
    except RuntimeError as exc:
        bulk = f"error: {exc}"
    return {
        "model": embedder.name, "dimensions": embedder.dimensions, "runtime": getattr(model, "label", "torch"),
        "bulk": bulk
    }


def content_hash(text: str) -> str:
    """The hash that decides whether a stored vector is still current."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]
