"""headway: attention for edge devices, from Python.

    import numpy as np, headway
    q = np.random.rand(16, 8, 64).astype(np.float32)   # [T_q, n_heads, head_dim]
    k = np.random.rand(16, 2, 64).astype(np.float32)   # [T_kv, n_kv_heads, head_dim] (GQA)
    o = headway.attend(q, k, k, causal=True, kv_dtype="q8_0")

attend(q, k, v, ...) returns a new float32 array [T_q, n_heads, head_dim]. q is float32, k and v
float32 or float16, all C-contiguous: they are read in place, never copied (a strided view raises
InvalidArgument; numpy.ascontiguousarray makes it contiguous). kv_dtype (None: the dtype of k and
v) picks the storage the kernels read; any other dtype than k's and v's converts them once, as
`headway attend --kv-dtype` does. The GIL is released while headway computes.

plan(preset= | config= | gguf= | spec=) returns the dict `headway plan --json` prints; presets()
lists the built-in names. KvCache is one layer's cache, Session a stack of attention blocks; both
own one 64-byte aligned block of memory allocated when they are made.

Errors raise headway.Error subclasses with the library's message: InvalidArgument, OutOfRange,
Unsupported, NotFound and DataLoss are also ValueErrors; FailedPrecondition and InternalError are
RuntimeErrors. Each carries .code, the library's name of its Status code.

Model(gguf=PATH) runs a whole decoder from its GGUF file (weights dequantized into one arena it
owns, kv_dtype "f16" by default): logits(ids) is `headway logits` ([T, vocab] float32, a fresh
sequence), generate(prompt) yields the text pieces of `headway generate` as they come (a fresh
sequence each call; chat=True wraps the prompt in the file's chat template), tokenize/detokenize
use the file's tokenizer. Tokenizer(gguf= | tokenizer_json= | model_dir=) is a tokenizer alone.

backend="gpu" runs on the Vulkan backend when the build has it (gpu_compiled()); otherwise, or
without a usable device, it raises Unsupported with the reason.

headway.transformers (an optional import: it needs torch and transformers) is an attention
backend for Hugging Face transformers (register(), then attn_implementation="headway") and a
transformers Cache over headway's quantized KV caches (Cache(config, kv_dtype="q8_0")).

headway.executorch (an optional import: it needs torch and the executorch wheel) defines headway's
KV-cache attention as torch.library ops for torch.export, swaps them into a Llama-style model
(replace_attention(model)), and loads libheadway_executorch.so, their ExecuTorch kernels.
"""

from collections.abc import Iterator, Sequence
from typing import Optional

from ._headway import (
    DataLoss,
    Error,
    FailedPrecondition,
    InternalError,
    InvalidArgument,
    KvCache,
    NotFound,
    OutOfRange,
    Session,
    Tokenizer,
    Unsupported,
    _Model,
    __version__,
    attend,
    gpu_compiled,
    plan,
    presets,
)

__all__ = [
    "DataLoss",
    "Error",
    "FailedPrecondition",
    "InternalError",
    "InvalidArgument",
    "KvCache",
    "NotFound",
    "OutOfRange",
    "Model",
    "Session",
    "Tokenizer",
    "Unsupported",
    "__version__",
    "attend",
    "gpu_compiled",
    "plan",
    "presets",
]


class Model(_Model):
    """A whole decoder from a GGUF file: Model(gguf=PATH, kv_dtype="f16", weight_dtype=None,
    threads=1, ctx=None, kv_rotation="none"), ctx None meaning the model's context; kv_rotation
    "hadamard" rotates a q8_0/q4_0 cache's rows before they are quantized. weight_dtype None keeps the weights
    as the file holds them (its quantized blocks, read in place from the mapped file); "f32",
    "f16" or "bf16" converts them into the model's arena. Each logits() and generate() call
    starts a fresh sequence; position says how many tokens the cache holds after it."""

    def generate(
        self,
        prompt: Optional[str] = None,
        ids: Optional[Sequence[int]] = None,
        max_tokens: int = 128,
        temperature: float = 0.8,
        top_k: int = 40,
        top_p: float = 0.95,
        min_p: float = 0.05,
        repeat_penalty: float = 1.0,
        seed: int = 0,
        chat: bool = False,
    ) -> Iterator[str]:
        """Text after prompt (or the token ids `ids`), yielded piece by piece as it is made, up to
        max_tokens tokens or the end-of-turn token. Sampling as `headway generate` (llama.cpp's
        defaults; temperature 0: greedy). The prompt runs, and bad input raises, at this call;
        each piece is one model step with the GIL released. A later generate(), logits() or
        reset() ends this generation (its next piece raises FailedPrecondition)."""
        ticket = self._start(
            prompt, None if ids is None else list(ids), max_tokens, temperature, top_k, top_p, min_p,
            repeat_penalty, seed, chat
        )
        return self._pieces(ticket)

    def _pieces(self, ticket: int) -> Iterator[str]:
        while (piece := self._next(ticket)) is not None:
            if piece:
                yield piece
