"""The int8 embedding model: made once per user from the verified fp32 weights, kept
in the user's cache with its sha256 beside it."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import structlog

from memoryd.models.assets import WEIGHTS, ModelError, digest, verify
from memoryd.models.onnx import ort_version, unmasked
from memoryd.models.rowquant import per_row

log = structlog.get_logger("memoryd.models.embedder")


class _QuantizerNotice(logging.Filter):
    """onnxruntime's quantizer logs on the root logger: a line per tensor it leaves in
    float (info) and a warning that it prefers pre-processed models. Neither says
    anything about our model, so they are kept out of the daemon's log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return (record.levelno >= logging.WARNING
                and "pre-processing before quantization" not in record.getMessage())


def quantized(model: Path, cache_dirs: list[Path]) -> Path:
    """The int8 model, made once per user (and onnxruntime version) from the fp32 one
    (verified first): weights quantized per channel, activations per row
    (`rowquant.per_row`, so a text's vector is the same in any batch), its attention
    masks taken out (`onnx.unmasked`): about 2.5x faster; its vectors differ slightly,
    so the two never share an index. Kept in the first of `cache_dirs` that can be
    written, with its sha256 beside it: a damaged copy is made again, never loaded."""
    name = f"all-MiniLM-L6-v2.int8-rows-unmasked.ort-{ort_version()}.onnx"
    for folder in cache_dirs:
        target = folder / name
        check = folder / f"{name}.sha256"
        try:
            if (target.is_file() and check.is_file()
                    and check.read_text(encoding="ascii").strip() == digest(target)):
                return target
        except (OSError, UnicodeDecodeError):
            pass
        verify(model.parents[1], WEIGHTS)
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            return _quantize(model, target, check)
        except OSError as exc:
            log.warning("embedder.cache_unwritable", folder=str(folder), error=str(exc))
    raise ModelError("no folder to keep the int8 model in: "
                     + ", ".join(str(f) for f in cache_dirs))


def _quantize(model: Path, target: Path, check: Path) -> Path:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    log.info("embedder.quantizing", file=str(target))
    # Two daemons may make it at once: each in a file of its own, then renamed.
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    notice = _QuantizerNotice()
    logging.getLogger().addFilter(notice)
    try:
        quantize_dynamic(str(model), str(partial), per_channel=True, reduce_range=True,
                         weight_type=QuantType.QInt8)
    finally:
        logging.getLogger().removeFilter(notice)
    onnx.save(unmasked(per_row(onnx.load(str(partial)))), str(partial))
    made = digest(partial)
    partial.replace(target)
    sidecar = check.with_name(f".{check.name}.{os.getpid()}.partial")
    sidecar.write_text(made + "\n", encoding="ascii")
    sidecar.replace(check)
    return target
