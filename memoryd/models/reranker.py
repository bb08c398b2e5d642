"""Reranker: an optional ONNX cross-encoder the user points `reranker.model_dir` at.

No cross-encoder ships on PyPI, so this stage is off by
default. The directory holds `model.onnx` and `tokenizer.json`; a (query,
passage) pair is encoded as one sequence with token types, and the relevance is
sigmoid(logit[:, 0]).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memoryd.models.assets import ModelError
from memoryd.models.embedder import clip, load_tokenizer
from memoryd.models.onnx import session


class OnnxCrossEncoder:
    def __init__(self, model_dir: Path, threads: int = 1, max_tokens: int = 512,
                 batch_size: int = 16) -> None:
        model, tokenizer = model_dir / "model.onnx", model_dir / "tokenizer.json"
        for path in (model, tokenizer):
            if not path.is_file():
                raise ModelError(f"reranker.model_dir {model_dir} has no {path.name}")
        self.tokenizer = load_tokenizer(tokenizer, max_tokens)
        self.max_tokens = max_tokens
        self._session = session(model, threads)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._batch = batch_size

    def score(self, pairs: list[tuple[str, str]]) -> list[float]:
        out: list[float] = []
        for start in range(0, len(pairs), self._batch):
            chunk = pairs[start:start + self._batch]
            encoded = self.tokenizer.encode_batch(
                [(clip(q, self.max_tokens), clip(d, self.max_tokens)) for q, d in chunk])
            feeds = {"input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
                     "attention_mask": np.array([e.attention_mask for e in encoded],
                                                dtype=np.int64),
                     "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64)}
            feeds = {k: v for k, v in feeds.items() if k in self._inputs}
            logits = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
            logits = logits.reshape(len(chunk), -1)[:, 0]
            out.extend((1 / (1 + np.exp(-logits))).tolist())
        return out
