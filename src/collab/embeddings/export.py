"""The ONNX export of a local sentence-transformers model, made offline and cached by the weights' content hash."""

import hashlib
import json
import logging
import os
import uuid
from pathlib import Path

log = logging.getLogger("collab.embeddings")

# Part of the cache key: bump it when the recipe below changes, so no process reuses an export made the old way.
RECIPE = "mean-pool-normalize/opset17/ort-fused/int8-attention-only/1"
# Short and long texts the export must reproduce (short ones are where int8 drifts most).
PROBES = ("ok", "No", "Thanks!", "TBD", "Typo in heading", "rejected: Tone is too casual",
          "accepted: Alt text now describes the chart's main finding, and the colours pass WCAG AA contrast.",
          "Summer sale: up to 40% off selected items until August 31. Terms apply; not valid with other offers. " * 6)
MIN_COSINE = 0.99
# The torch vectors of PROBES, kept beside the export so a bf16 runtime is checked without loading another.
PROBE_VECTORS = "probes.npy"
# bf16 must stay within the search's "same text" tier (judgments/search.py IDENTICAL): measured 0.9999.
MIN_COSINE_BF16 = 0.999
# Transformer architectures whose plain export was checked (others fall back to torch).
ARCHITECTURES = {"bert", "roberta", "xlm-roberta", "mpnet", "distilbert", "camembert", "electra"}
_FILES = ("config.json", "tokenizer.json", "modules.json", "sentence_bert_config.json", "1_Pooling/config.json")


class NotExportable(Exception):
    """The model is not a plain transformer + mean pooling; use torch."""


def local_dir(source: str) -> Path | None:
    """The local folder of a model path or an already-cached hub name (never a download)."""
    path = Path(source)
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(source, local_files_only=True))
    except Exception:  # not cached locally: sentence-transformers reports it in its own words
        return None


def max_length(path: Path) -> int:
    """The token limit sentence-transformers applies (its `max_seq_length`, else the model's)."""
    bert = path / "sentence_bert_config.json"
    if bert.exists() and json.loads(bert.read_text()).get("max_seq_length"):
        return int(json.loads(bert.read_text())["max_seq_length"])
    return int(json.loads((path / "config.json").read_text()).get("max_position_embeddings", 512))


def check(path: Path) -> None:
    """Raise NotExportable unless the model is a plain encoder with mean pooling and a fast tokenizer."""
    if not (path / "tokenizer.json").exists() or not (path / "config.json").exists():
        raise NotExportable("no tokenizer.json/config.json")
    if json.loads((path / "config.json").read_text()).get("model_type") not in ARCHITECTURES:
        raise NotExportable("architecture not checked for export")
    modules = path / "modules.json"
    if modules.exists():
        kinds = [m["type"].rsplit(".", 1)[-1] for m in json.loads(modules.read_text())]
        if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
            raise NotExportable(f"modules {kinds}")
        pooling = json.loads((path / json.loads(modules.read_text())[1]["path"] / "config.json").read_text())
        modes = [k for k, v in pooling.items() if k.startswith("pooling_mode") and v]
        if modes != ["pooling_mode_mean_tokens"]:
            raise NotExportable(f"pooling {modes}")


def fingerprint(path: Path) -> str:
    """The content hash of the weights, configuration and tokenizer (and of the export recipe)."""
    digest = hashlib.sha256(RECIPE.encode())
    weights = sorted(p for p in path.iterdir() if p.suffix in (".safetensors", ".bin"))
    for file in [*weights, *(path / name for name in _FILES)]:
        if file.exists():
            digest.update(file.name.encode())
            with file.open("rb") as handle:
                digest.update(hashlib.file_digest(handle, "sha256").digest())
    return digest.hexdigest()[:32]


def ensure(path: Path, cache_root: Path, dtype: str) -> Path:
    """The cached export of a model folder for a dtype, made on first use: `model.onnx` (fp32, fused for ONNX
    Runtime), `model.int8.onnx`, or `model.plain.onnx` (bf16: standard operators only, for OpenVINO)."""
    check(path)
    folder = cache_root / fingerprint(path)
    fp32, int8, plain = folder / "model.onnx", folder / "model.int8.onnx", folder / "model.plain.onnx"
    if not fp32.exists() or (dtype == "bf16" and not (plain.exists() and (folder / PROBE_VECTORS).exists())):
        folder.mkdir(parents=True, exist_ok=True)
        _in_child(_export, path, fp32)
    if dtype == "bf16":
        return plain
    if dtype == "int8" and not int8.exists():
        from collab.embeddings.runtime import Tokens

        try:
            _quantize(fp32, int8, Tokens(path / "tokenizer.json", max_length(path)))
        except NotExportable as why:
            log.warning("int8 refused for %s (%s); using fp32", path.name, why)
            return fp32
    return int8 if dtype == "int8" else fp32


def _in_child(step, *args) -> None:
    """Run an export step in a child process, offline: torch and the traced model (~500 MiB) never stay resident
    in the long-lived worker that asked, and no connection leaves the machine while weights are read."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no copy of the parent's threads or pools
    with ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_offline) as child:
        child.submit(step, *args).result()  # NotExportable and any other failure come back as raised there


def _offline() -> None:
    """In the export child: hubs off, and a connection to any host but this one fails."""
    import socket

    os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = "1"
    connect = socket.socket.connect

    def local_only(sock, address):
        if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1", "localhost"):
            raise OSError(f"the model export makes no network connection (asked for {address[0]})")
        return connect(sock, address)

    socket.socket.connect = local_only  # type: ignore[method-assign]  # undone when the export ends


def _atomic(target: Path, write) -> None:
    # Two processes starting at once each write their own file and rename it: the last rename wins, both are whole.
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _export(path: Path, target: Path) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy
    import torch
    from transformers import AutoModel

    # Eager attention traces to plain ops whatever the mask holds (the sdpa path branches on it in Python).
    model = AutoModel.from_pretrained(str(path), attn_implementation="eager").eval()
    limit = max_length(path)

    class Pooled(torch.nn.Module):

        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids, attention_mask):
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=-1)

    pooled = Pooled(model)
    ids = torch.ones(2, 8, dtype=torch.long)
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 5:] = 0  # a padded row, so the trace keeps the masking
    axes = {
        "input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"}, "embedding": {0: "batch"}
    }
    config = json.loads((path / "config.json").read_text())
    from collab.embeddings.runtime import Tokens, session

    probe_ids, probe_mask = Tokens(path / "tokenizer.json", limit).batch(list(PROBES))
    # Computed before exporting: the module answers differently once it has been traced.
    with torch.no_grad():
        expected = pooled(torch.from_numpy(probe_ids), torch.from_numpy(probe_mask)).numpy()

    def checked(tmp: Path) -> None:
        got = session(tmp, threads=1).run(None, {"input_ids": probe_ids, "attention_mask": probe_mask})[0]
        _agrees("export drifts from torch", got, expected)

    def write_plain(tmp: Path) -> None:
        torch.onnx.export(pooled, (ids, mask), str(tmp), input_names=["input_ids", "attention_mask"],
                          output_names=["embedding"], dynamic_axes=axes, opset_version=17, dynamo=False)
        checked(tmp)

    def write_fused(tmp: Path) -> None:
        _fuse(plain, tmp, config)
        checked(tmp)

    def write_probes(tmp: Path) -> None:
        with tmp.open("wb") as handle:
            numpy.save(handle, expected)

    log.info("exporting %s to ONNX (once; cached under %s)", path.name, target.parent)
    _atomic(target.with_name(PROBE_VECTORS), write_probes)
    plain = target.with_name("model.plain.onnx")
    # The plain export first: the fused one is made from it, and OpenVINO reads it (it has no ORT-only operators).
    _atomic(plain, write_plain)
    _atomic(target, write_fused)


def _fuse(raw: Path, target: Path, config: dict) -> None:
    """Fuse attention, layer norms and GELU for ONNX Runtime's CPU kernels (same numbers, ~10% faster)."""
    from onnxruntime.transformers import optimizer

    try:
        fused = optimizer.optimize_model(str(raw), model_type="bert",
                                         num_heads=int(config.get("num_attention_heads", 0)),
                                         hidden_size=int(config.get("hidden_size", 0)), opt_level=0)
        fused.save_model_to_file(str(target))
    except Exception:  # an architecture the fuser does not know still runs unfused
        log.warning("ONNX fusion failed; using the plain export", exc_info=True)
        target.write_bytes(raw.read_bytes())


def _quantize(fp32: Path, target: Path, tokens) -> None:
    """Per-channel dynamic int8 of the attention weights only; the feed-forward layers stay fp32.

    Quantizing every MatMul (the naive recipe) drifts to cosine 0.96 on one-word texts: the feed-forward
    output layers see GELU outliers. The attention-only recipe keeps min cosine >= 0.99 (ADR 0027).
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from collab.embeddings.runtime import session

    graph = onnx.load(str(fp32), load_external_data=False).graph
    weights = {i.name for i in graph.initializer}
    nodes = [
        n.name for n in graph.node
        if n.op_type == "Attention" or (n.op_type == "MatMul" and "attention" in n.name and any(i in weights
                                                                                                for i in n.input))
    ]
    ids, mask = tokens.batch(list(PROBES))
    expected = session(fp32, threads=1).run(None, {"input_ids": ids, "attention_mask": mask})[0]

    def write(tmp: Path) -> None:
        quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=["MatMul", "Attention"], nodes_to_quantize=nodes,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        got = session(tmp, threads=1).run(None, {"input_ids": ids, "attention_mask": mask})[0]
        _agrees("int8 drifts from fp32", got, expected)

    log.info("quantizing %s to int8 (once)", fp32.parent.name)
    _atomic(target, write)


def check_bf16(session, plain: Path, tokens) -> None:
    """Raise NotExportable unless a bf16 session reproduces the torch vectors of the probes (one at a time and
    batched) to the search's "same text" tier."""
    import numpy

    expected = numpy.load(plain.with_name(PROBE_VECTORS))
    ids, mask = tokens.batch(list(PROBES))
    batched = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    single = numpy.vstack(
        [session.run(None, dict(zip(("input_ids", "attention_mask"), tokens.batch([t]))))[0] for t in PROBES])
    _agrees("bf16 drifts from torch", numpy.vstack([batched, single]), numpy.vstack([expected, expected]),
            MIN_COSINE_BF16)


def _agrees(what: str, got, expected, bar: float = MIN_COSINE) -> None:
    """Raise NotExportable(what) when a row of `got` is further than `bar` (cosine) from its row of `expected`."""
    import numpy

    worst = float(numpy.min(numpy.sum(numpy.asarray(got) * expected, axis=1)))
    if worst < bar:
        raise NotExportable(f"{what} (min cosine {worst:.4f})")
