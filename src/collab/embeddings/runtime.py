"""The runtimes behind an embedder: ONNX Runtime (queries and bulk, CPU or CUDA), OpenVINO (bf16 on CPUs that
compute it natively) and torch (the fallback)."""

import functools
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import numpy

log = logging.getLogger("collab.embeddings")

QUERY_CACHE = 1024
# Texts per forward pass on the CPU: 32 measured fastest (mixed lengths 345 texts/s against 239 at 64, which pads
# more; uniform docstring sentences 211 against 204). A GPU batches what it is given.
CPU_BATCH = 32


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def session(path: Path, *, threads: int, providers: list[str] | None = None):
    """An ONNX Runtime session with all graph optimizations and `threads` intra-op threads."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    # Idle intra-op threads sleep: on a few cores a spinning pool takes CPU that Postgres, the API and the other
    # runs need. Bulk: 204 texts/s without spinning, 189 with. Queries: spinning saves ~0.8 ms in a quiet process,
    # but in the service it cost the worker ~30 ms of CPU per search against ~16 (e2e p50 22 against 20 ms).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(path), options, providers=providers or ["CPUExecutionProvider"])


@functools.cache
def _openvino():
    import openvino

    return openvino.Core()


# oneDNN's ISA caps (ONEDNN_MAX_CPU_ISA, which OpenVINO's CPU plugin reads too) below the first with bfloat16.
BELOW_BF16 = {"SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE", "AVX512_CORE_VNNI"}


@functools.cache
def native_bf16() -> bool:
    """Whether OpenVINO is installed and this CPU computes bfloat16 natively (AVX512-BF16 or AMX), unless
    ONEDNN_MAX_CPU_ISA caps the instruction set below that (as on a CPU without it: fp32 on ONNX Runtime)."""
    if os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper() in BELOW_BF16:
        return False
    try:
        return "BF16" in _openvino().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    except ImportError:
        return False


def openvino_model(path: Path):
    """An ONNX file read once: the sessions compiled from it share its weights (three sessions: 301 MiB against 511
    compiled from the file each time, measured)."""
    return _openvino().read_model(str(path))


class OpenVinoSession:
    """An OpenVINO compiled model behind ONNX Runtime's `run`, an infer request per calling thread (a request
    runs one inference at a time; the compiled model serves several)."""

    def __init__(self, model, *, threads: int, streams: int = 1, precision: str = "bf16"):
        # bf16 where the CPU has it (OpenVINO keeps f32 elsewhere); no pinning: the cores are shared with Postgres.
        # One stream runs one inference on all its threads (latency); several split the threads between them.
        config = {"INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": threads, "ENABLE_CPU_PINNING": False}
        config.update({"NUM_STREAMS": streams} if streams > 1 else {"PERFORMANCE_HINT": "LATENCY"})
        self.compiled = _openvino().compile_model(model, "CPU", config)
        self.streams = streams
        self.local = threading.local()

    def run(self, _outputs, feeds: dict) -> list[numpy.ndarray]:
        request = getattr(self.local, "request", None)
        if request is None:
            request = self.local.request = self.compiled.create_infer_request()
        # Copied: the request's output buffer is overwritten by its next inference.
        return [numpy.array(request.infer(feeds)[0], copy=True)]

    def run_all(self, batches: list[dict]) -> list[numpy.ndarray]:
        """Every batch, `streams` at a time, the results in order. A thread per stream (this one and helpers),
        not OpenVINO's AsyncInferQueue: a process that used one aborted at exit now and then (3 of 12)."""
        results: list = [None] * len(batches)
        failed: list[BaseException] = []

        def work(first: int) -> None:
            try:
                for i in range(first, len(batches), self.streams):
                    results[i] = self.run(None, batches[i])[0]
            except BaseException as exc:  # raised in the caller below
                failed.append(exc)

        helpers = [
            threading.Thread(target=work, args=(i, ), daemon=True) for i in range(1, min(self.streams, len(batches)))
        ]
        for helper in helpers:
            helper.start()
        work(0)
        for helper in helpers:
            helper.join()
        if failed:
            raise failed[0]
        return results


class Tokens:
    """The model's own fast tokenizer (its tokenizer.json), truncating like sentence-transformers."""

    def __init__(self, path: Path, max_length: int):
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(path))
        self.tokenizer.enable_truncation(max_length)
        self.tokenizer.no_padding()  # padded per batch below, to the batch's longest text

    def encode(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch(texts)]

    @staticmethod
    def pad(rows: list[list[int]]) -> tuple[numpy.ndarray, numpy.ndarray]:
        width = max(len(r) for r in rows)
        ids = numpy.zeros((len(rows), width), dtype=numpy.int64)
        mask = numpy.zeros((len(rows), width), dtype=numpy.int64)
        for i, row in enumerate(rows):
            ids[i, :len(row)] = row
            mask[i, :len(row)] = 1
        return ids, mask

    def batch(self, texts: list[str]) -> tuple[numpy.ndarray, numpy.ndarray]:
        return self.pad(self.encode(texts))


class Recent:
    """A small LRU of query vectors (a repeated search skips the model); the caller picks the key."""

    def __init__(self, size: int = QUERY_CACHE):
        self.size, self.lock = size, threading.Lock()
        self.items: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Hashable):
        with self.lock:
            vector = self.items.get(key)
            if vector is not None:
                self.items.move_to_end(key)
            return vector

    def put(self, key: Hashable, vector) -> None:
        with self.lock:
            self.items[key] = vector
            while len(self.items) > self.size:
                self.items.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.items.clear()


def bulk_device(device: str) -> str:
    """Where bulk embedding runs: 'cuda-onnx' (onnxruntime-gpu), 'cuda-torch', or 'cpu'."""
    if device == "cpu":
        return "cpu"
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        return "cuda-onnx"
    if not Path("/dev/nvidiactl").exists():  # no NVIDIA driver: skip importing torch (seconds) just to ask
        if device == "cuda":
            raise RuntimeError("device 'cuda' asked for, but no NVIDIA GPU is visible")
        return "cpu"
    try:
        import torch

        if torch.cuda.is_available():
            return "cuda-torch"
    except ImportError:
        pass
    if device == "cuda":
        raise RuntimeError("device 'cuda' asked for, but neither onnxruntime-gpu nor torch sees a GPU")
    return "cpu"


class OnnxModel:
    """An exported model: sessions for single queries (an all-cores one, and a one-thread one beside it) and one for
    batches (or a GPU); on ONNX Runtime, or on OpenVINO in bf16 (`openvino=True`) for the CPU's sessions."""

    def __init__(self, model: Path, tokens: Tokens, *, source: str, device: str = "auto", label: str = "onnx",
                 openvino: bool = False):
        self.path, self.tokens, self.source, self.device, self.label = model, tokens, source, device, label
        self.openvino = openvino
        self.cpu_session = (functools.partial(OpenVinoSession, openvino_model(model))
                            if openvino else functools.partial(session, model))
        # A query pass takes every core (a 26-token sentence in ~4.9 ms on two threads against ~8 on one). A loop
        # runs one pass at a time and batches what waits (embeddings/batching.py); a pass of a second loop in the
        # process (a CLI or a test beside a worker) runs beside it on a one-thread session rather than wait. Both
        # are the queries' own: never behind a batch.
        self.query = self.cpu_session(threads=cores())
        self.beside = self.cpu_session(threads=1)
        self._query_lock = threading.Lock()
        self._bulk = None
        self._bulk_lock = threading.Lock()
        # One batch at a time on ONNX Runtime's all-cores session: concurrent encodes interleave batch by batch
        # (each caller keeps its turn) instead of running two passes on the same threads (168 texts/s against 189).
        # OpenVINO's streams queue the batches of concurrent callers themselves.
        self._pass = threading.Lock()
        self.dimensions = int(self._run(self.query, ["warm up"]).shape[1])

    def _run(self, sess, texts: list[str]) -> numpy.ndarray:
        ids, mask = self.tokens.batch(texts)
        return sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]

    def bulk(self):
        """The batch runtime, made on first use (device chosen automatically)."""
        with self._bulk_lock:
            if self._bulk is None:
                where = bulk_device(self.device)
                if where == "cuda-onnx":
                    self._bulk = session(self.path, threads=1,
                                         providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
                elif where == "cuda-torch":
                    self._bulk = TorchModel(self.source, device="cuda")
                elif self.openvino:
                    # A stream per core, a thread each, a batch each: 619-653 texts/s against 582-623 for one
                    # stream of every core (three rounds in one process, ADR 0027).
                    self._bulk = self.cpu_session(threads=cores(), streams=cores())
                else:
                    self._bulk = self.cpu_session(threads=cores())
                self.bulk_device = where
                log.info("bulk embedding with %s on %s", self.label, where)
            return self._bulk

    def queries(self, texts: list[str]) -> numpy.ndarray:
        """Search queries (one, or a few batched: embeddings/batching.py) in one pass on the query sessions."""
        # No cache here: a cache shared by every caller would let one tenant time another's texts
        # (the search path keeps its own, per tenant: judgments/search.py).
        if not self._query_lock.acquire(blocking=False):
            return self._run(self.beside, texts)  # both runtimes run a session from several threads
        try:
            return self._run(self.query, texts)
        finally:
            self._query_lock.release()

    def encode(self, texts: list[str], *, batch_size: int = 64) -> numpy.ndarray:
        """Unit-length float32 vectors, one row per text, in order."""
        if len(texts) == 1:
            return self.queries(texts)
        runtime = self.bulk()
        if isinstance(runtime, TorchModel):
            return runtime.encode(texts, batch_size=batch_size)
        if self.bulk_device == "cpu":
            batch_size = min(batch_size, CPU_BATCH)
        # Sorted by length, so each batch pads to about its own texts' length rather than the longest one's.
        rows = self.tokens.encode(texts)
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        out = numpy.empty((len(rows), self.dimensions), dtype=numpy.float32)
        chunks = [order[start:start + batch_size] for start in range(0, len(order), batch_size)]
        feeds = [dict(zip(("input_ids", "attention_mask"), Tokens.pad([rows[i] for i in chunk]))) for chunk in chunks]
        if isinstance(runtime, OpenVinoSession):  # its streams take the batches in turn, beside other callers'
            for chunk, vectors in zip(chunks, runtime.run_all(feeds)):
                out[chunk] = vectors
            return out
        for chunk, one in zip(chunks, feeds):
            with self._pass:
                out[chunk] = runtime.run(None, one)[0]
        return out


class TorchModel:
    """sentence-transformers on torch: models without an export, bf16, or a GPU without onnxruntime-gpu."""

    def __init__(self, source: str, *, device: str = "cpu", dtype: str = "fp32"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # weights come from a local path, never a hub
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.label = f"torch-{dtype}"
        self.model = SentenceTransformer(source, device=device)
        if dtype == "bf16":
            import torch

            # ~1.7x faster on CPU; cosine to fp32 vectors >= 0.998 (docs/benchmarks.md).
            self.model = self.model.to(torch.bfloat16)
        dims = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        dimensions = dims()
        assert dimensions is not None  # an embedding model has a fixed output size
        self.dimensions = int(dimensions)
        self.lock = threading.Lock()

    def queries(self, texts: list[str]) -> numpy.ndarray:
        return self.encode(texts)

    def encode(self, texts: list[str], *, batch_size: int = 64) -> numpy.ndarray:
        with self.lock:  # one forward pass at a time per process; torch uses the cores itself
            vectors = self.model.encode(texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
                                        show_progress_bar=False)
        return numpy.asarray(vectors, dtype=numpy.float32)
