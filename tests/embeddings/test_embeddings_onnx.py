"""The exported embedder (ONNX Runtime fp32, OpenVINO bf16): its vectors agree with the torch model, it never
downloads, its export is cached."""

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

from collab.embeddings import export
from collab.embeddings.model import Embedder, resolve
from collab.embeddings.runtime import native_bf16

SAMPLE = [
    line for line in (Path(__file__).parents[1] / "fixtures_embedding_sample.txt").read_text().splitlines() if line
]
# What a default load runs here: OpenVINO bf16 where the CPU computes bf16 natively, else ONNX Runtime fp32.
DEFAULT_LABEL = "openvino-bf16" if native_bf16() else "onnx-fp32"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def torch_vectors():
    """The packaged model on sentence-transformers/torch: the vectors already stored in every deployment."""
    name, source = resolve("all-MiniLM-L6-v2")
    return numpy.asarray(Embedder(name, source, runtime="torch").encode(SAMPLE), dtype=numpy.float32)


@pytest.fixture(scope="module")
def no_network():
    """Any connection to a host other than 127.0.0.1 fails the test that made it."""
    attempts: list = []
    real = socket.socket.connect

    def connect(self, address):
        if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1", "localhost"):
            attempts.append(address)
            raise OSError("network is off in this test")
        return real(self, address)

    socket.socket.connect = connect
    yield attempts
    socket.socket.connect = real


@pytest.fixture(scope="module")
def onnx_fp32(cache, no_network):
    name, source = resolve("all-MiniLM-L6-v2")
    return Embedder(name, source, runtime="onnx", cache_dir=cache)


@pytest.fixture(scope="module")
def openvino_bf16(cache, no_network):
    name, source = resolve("all-MiniLM-L6-v2")
    return Embedder(name, source, runtime="openvino", dtype="bf16", cache_dir=cache)


def cosines(a, b) -> numpy.ndarray:
    return numpy.sum(numpy.asarray(a, dtype=numpy.float32) * b, axis=1)


def test_sample_is_real_and_mixed():
    assert len(SAMPLE) >= 180
    assert sum(len(t.split()) <= 2 for t in SAMPLE) >= 30 and sum(len(t.split()) > 100 for t in SAMPLE) >= 2


def test_onnx_fp32_agrees_with_torch_batched_and_one_by_one(onnx_fp32, torch_vectors):
    batched = cosines(onnx_fp32.encode(SAMPLE, batch_size=16), torch_vectors)
    single = cosines([onnx_fp32.encode([t])[0] for t in SAMPLE], torch_vectors)
    assert batched.min() >= 0.999 and single.min() >= 0.999
    assert onnx_fp32.name == "all-MiniLM-L6-v2" and onnx_fp32.dimensions == 384


def test_openvino_bf16_agrees_with_torch_batched_and_one_by_one(openvino_bf16, torch_vectors):
    # Where the CPU has no bf16 OpenVINO computes in f32: the bar holds either way. Measured here (AVX512-BF16):
    # min cosine 0.9999, above the search's "same text" tier (0.999).
    batched = cosines(openvino_bf16.encode(SAMPLE, batch_size=16), torch_vectors)
    single = cosines([openvino_bf16.encode([t])[0] for t in SAMPLE], torch_vectors)
    assert batched.min() >= 0.999 and single.min() >= 0.999
    assert openvino_bf16.model.label == "openvino-bf16" and openvino_bf16.model.path.name == "model.plain.onnx"


def test_an_openvino_vector_is_not_overwritten_by_the_next_inference(openvino_bf16):
    # An infer request reuses its output buffer: what one encode returned must not change with the next.
    first = numpy.asarray(openvino_bf16.encode(["hero image alt text"])[0])
    kept = first.copy()
    openvino_bf16.encode(["Summer sale: up to 40% off selected items"])
    openvino_bf16.encode(["ok", "Typo in heading"])
    assert numpy.array_equal(first, kept)


def test_openvino_batches_come_back_in_order_and_a_failed_one_fails_the_encode(openvino_bf16, monkeypatch):
    from collab.embeddings.runtime import OpenVinoSession

    bulk = openvino_bf16.model.bulk()
    assert isinstance(bulk, OpenVinoSession) and bulk.streams >= 1
    texts = SAMPLE[:100]
    one_by_one = numpy.asarray([openvino_bf16.encode([t])[0] for t in texts])
    assert cosines(openvino_bf16.encode(texts), one_by_one).min() >= 0.999  # 4 batches over the streams
    real = bulk.run

    def long_batches_fail(outputs, feeds):
        if feeds["input_ids"].shape[1] > 20:
            raise RuntimeError("inference failed")
        return real(outputs, feeds)

    monkeypatch.setattr(bulk, "run", long_batches_fail)
    with pytest.raises(RuntimeError, match="inference failed"):
        openvino_bf16.encode(texts)


def test_load_uses_openvino_bf16_where_the_cpu_has_it_else_onnx_fp32(cache, onnx_fp32):
    # int8 falls short on this sample when batched (min cosine 0.9899 attention-only), so fp32 without native bf16.
    from collab.embeddings.model import load

    model = load("all-MiniLM-L6-v2", cache_dir=cache)
    assert model.model.label == DEFAULT_LABEL
    assert model.model.path.name == ("model.plain.onnx" if native_bf16() else "model.onnx")


def test_without_native_bf16_the_default_is_onnx_fp32(cache, onnx_fp32, monkeypatch):
    from collab.embeddings import runtime

    monkeypatch.setattr(runtime, "native_bf16", lambda: False)
    name, source = resolve("all-MiniLM-L6-v2")
    assert Embedder(name, source, cache_dir=cache).model.label == "onnx-fp32"
    assert Embedder(name, source, dtype="fp32", cache_dir=cache).model.label == "onnx-fp32"


def test_an_isa_cap_below_bf16_turns_bf16_off():
    # ONEDNN_MAX_CPU_ISA (oneDNN's, read by OpenVINO's CPU plugin) at AVX2 is the CPU without AVX-512 that users
    # have: the embedding runs fp32 on ONNX Runtime there; a cap at AMX or none leaves the CPU's own answer.
    def asked(cap):
        env = {k: v
               for k, v in os.environ.items()
               if k != "ONEDNN_MAX_CPU_ISA"} | ({"ONEDNN_MAX_CPU_ISA": cap} if cap else {})
        code = "from collab.embeddings.runtime import native_bf16; print(native_bf16())"
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              check=True).stdout.strip()

    assert asked("AVX2") == asked("avx512_core_vnni") == "False"
    assert asked("AVX512_CORE_AMX") == asked(None) == str(native_bf16())


def test_bf16_that_drifts_is_refused_for_fp32(cache, onnx_fp32, monkeypatch, caplog):
    from collab.embeddings import runtime

    class Drifting:

        def run(self, _outputs, feeds):
            rows = numpy.zeros((feeds["input_ids"].shape[0], 384), dtype=numpy.float32)
            rows[:, 0] = 1.0  # unit vectors pointing nowhere near the model's
            return [rows]

    _, source = resolve("all-MiniLM-L6-v2")
    plain = export.ensure(Path(source), cache, "bf16")
    tokens = onnx_fp32.model.tokens
    with pytest.raises(export.NotExportable, match="bf16 drifts"):
        export.check_bf16(Drifting(), plain, tokens)

    def refuse(*_args):
        raise export.NotExportable("drifts")

    monkeypatch.setattr(runtime, "native_bf16", lambda: True)
    monkeypatch.setattr(export, "check_bf16", refuse)
    model = Embedder("all-MiniLM-L6-v2", source, cache_dir=cache)
    assert model.model.label == "onnx-fp32" and "bf16 refused" in caplog.text
    caplog.clear()

    def cannot_compile(*_args, **_kwargs):
        raise RuntimeError("Exception from src/inference: unsupported operation")

    monkeypatch.setattr(runtime, "openvino_model", cannot_compile)  # a graph OpenVINO does not take
    model = Embedder("all-MiniLM-L6-v2", source, cache_dir=cache)
    assert model.model.label == "onnx-fp32" and "unsupported operation" in caplog.text


def test_vectors_are_unit_length_and_in_input_order(onnx_fp32):
    texts = ["Legal footer absent", "ok", SAMPLE[-20] * 3, "Typo in heading"]
    vectors = numpy.asarray(onnx_fp32.encode(texts))
    assert numpy.allclose(numpy.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    for text, vector in zip(texts, vectors):
        assert float(numpy.dot(onnx_fp32.encode([text])[0], vector)) >= 0.9999
    assert onnx_fp32.encode([]) == []


def test_the_runtime_caches_no_text(onnx_fp32, monkeypatch):
    # A cache shared by every caller would let one tenant time another's texts; searches keep their own, per tenant.
    runs = []
    real = onnx_fp32.model._run
    monkeypatch.setattr(onnx_fp32.model, "_run", lambda sess, texts: runs.append(texts) or real(sess, texts))
    first = onnx_fp32.encode(["hero image alt text"])
    first[0][0] = 42.0
    assert onnx_fp32.encode(["hero image alt text"])[0][0] != 42.0
    assert runs == [["hero image alt text"], ["hero image alt text"]]


def test_a_query_that_comes_while_another_encodes_runs_beside_it_with_the_same_vector(onnx_fp32, monkeypatch):
    model = onnx_fp32.model
    alone = onnx_fp32.encode(["Missing alt text on the hero image"])[0]
    used = []
    real = model._run
    monkeypatch.setattr(model, "_run", lambda sess, texts: used.append(sess) or real(sess, texts))
    with model._query_lock:  # another query holds the all-cores session
        beside = onnx_fp32.encode(["Missing alt text on the hero image"])[0]
    again = onnx_fp32.encode(["Missing alt text on the hero image"])[0]
    assert used == [model.beside, model.query]  # not queued behind the first; the lock is free again after
    assert float(numpy.dot(alone, beside)) >= 0.9999 and float(numpy.dot(alone, again)) >= 0.9999


def test_export_is_cached_by_content_hash_and_nothing_was_downloaded(onnx_fp32, cache, no_network):
    [folder] = [p for p in cache.iterdir() if p.is_dir()]
    assert len(folder.name) == 32 and (folder / "model.onnx").exists() and (folder / "model.plain.onnx").exists()
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert no_network == []


def test_a_cached_export_starts_without_torch_or_network(onnx_fp32, cache):
    # A fresh process (like a worker starting): loads the cached export, embeds, never imports torch.
    code = ("import socket, sys\n"
            "def refuse(*a, **k): raise OSError('network is off')\n"
            "socket.socket.connect = lambda self, addr: refuse() if addr[0] not in ('127.0.0.1', '::1') else None\n"
            "from collab.embeddings.model import load\n"
            f"e = load('all-MiniLM-L6-v2', cache_dir={str(cache)!r})\n"
            "v = e.encode(['hero image alt text', 'ok'])\n"
            "print(e.model.label, len(v), 'torch' in sys.modules)\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [DEFAULT_LABEL, "2", "False"]


def test_the_first_export_runs_in_a_child_so_torch_never_stays_in_the_worker(tmp_path):
    # A fresh process with an empty cache (a worker's first start): the export happens, in a child process.
    code = ("import sys\n"
            "from collab.embeddings.model import load\n"
            f"e = load('all-MiniLM-L6-v2', cache_dir={str(tmp_path)!r})\n"
            "print(e.model.label, len(e.encode(['hero image alt text', 'ok'])), 'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-3:] == [DEFAULT_LABEL, "2", "False"]
    assert len(list(tmp_path.glob("*/model.onnx"))) == 1


def test_a_model_given_by_path_is_exported_under_its_own_name(tmp_path, cache, onnx_fp32, torch_vectors):
    # `collab reembed --model PATH` with a plain BERT-like sentence-transformers folder: exported too.
    _, source = resolve("all-MiniLM-L6-v2")
    copy = tmp_path / "my-minilm"
    shutil.copytree(source, copy)
    model = Embedder("my-minilm", str(copy), cache_dir=cache)
    assert model.model.label == DEFAULT_LABEL
    assert cosines(model.encode(SAMPLE[:40]), torch_vectors[:40]).min() >= 0.999


def test_a_model_that_does_not_export_falls_back_to_torch(tmp_path, cache):
    # CLS pooling is not what the export computes: the model runs on torch, with its own (correct) vectors.
    _, source = resolve("all-MiniLM-L6-v2")
    copy = tmp_path / "cls-minilm"
    shutil.copytree(source, copy)
    pooling = copy / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(config))
    model = Embedder("cls-minilm", str(copy), cache_dir=cache)
    assert model.model.label == "torch-fp32"
    reference = Embedder("cls-minilm", str(copy), runtime="torch")
    assert cosines(model.encode(SAMPLE[:10]), numpy.asarray(reference.encode(SAMPLE[:10]))).min() >= 0.9999


@pytest.mark.parametrize("runtime", ["onnx_fp32", "openvino_bf16"])
def test_queries_encoded_in_one_pass_match_their_vectors_one_by_one(runtime, request):
    embedder = request.getfixturevalue(runtime)
    texts = SAMPLE[:8]  # of different lengths: the pass pads them to the longest
    together = numpy.asarray(embedder.encode_queries(texts))
    alone = numpy.asarray([embedder.encode_queries([t])[0] for t in texts])
    assert together.shape == (8, embedder.dimensions)
    assert float(numpy.min(numpy.sum(together * alone, axis=1))) >= 0.9999
