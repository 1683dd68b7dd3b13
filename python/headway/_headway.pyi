"""Type stubs of the extension module headway._headway (python/src/)."""

from typing import Any, Optional, Sequence

import numpy as np
import numpy.typing as npt

__version__: str

class Error(Exception):
    code: str

class InvalidArgument(Error, ValueError): ...
class OutOfRange(Error, ValueError): ...
class Unsupported(Error, ValueError): ...
class NotFound(Error, ValueError): ...
class DataLoss(Error, ValueError): ...
class FailedPrecondition(Error, RuntimeError): ...
class InternalError(Error, RuntimeError): ...

def attend(
    q: npt.NDArray[np.float32],
    k: npt.NDArray[np.float32] | npt.NDArray[np.float16],
    v: npt.NDArray[np.float32] | npt.NDArray[np.float16],
    *,
    causal: bool = False,
    window: int = 0,
    softcap: float = 0.0,
    scale: Optional[float] = None,
    kv_dtype: Optional[str] = None,
    sinks: Optional[npt.NDArray[np.float32]] = None,
    sink_tokens: int = 0,
    alibi: bool = False,
    alibi_max_bias: float = 8.0,
    prefix: int = 0,
    window_symmetric: bool = False,
    seq_lens: Optional[Sequence[int]] = None,
    kv_seq_lens: Optional[Sequence[int]] = None,
    mask: Optional[npt.NDArray[np.bool_] | npt.NDArray[np.float32]] = None,
    threads: int = 1,
    backend: str = "cpu",
) -> npt.NDArray[np.float32]:
    """O = softmax(scale * Q K^T + mask) V: q [T_q, n_heads, head_dim], k and v [T_kv, n_kv_heads,
    head_dim]; returns a new float32 [T_q, n_heads, head_dim]."""

def _input_address(array: Any) -> int: ...
def _quantize_rows(x: npt.NDArray[np.float32], kv_dtype: str) -> bytes: ...
def _dequantize_rows(b: npt.NDArray[np.uint8], kv_dtype: str, n: int) -> npt.NDArray[np.float32]: ...
def gpu_compiled() -> bool: ...
def plan(
    *,
    preset: Optional[str] = None,
    config: Optional[str] = None,
    gguf: Optional[str] = None,
    spec: Optional[str] = None,
    kv_dtype: Optional[str] = None,
    threads: int = 1,
    max_tokens: int = 0,
    weight_dtype: Optional[str] = None,
    kv_rotation: Optional[str] = None,
) -> dict[str, Any]:
    """The plan of exactly one config source, as the dict `headway plan --json` prints."""

def presets() -> list[str]: ...

class KvCache:
    def __init__(
        self,
        *,
        preset: Optional[str] = None,
        config: Optional[str] = None,
        gguf: Optional[str] = None,
        spec: Optional[str] = None,
        kv_dtype: Optional[str] = None,
        threads: int = 1,
        max_tokens: int = 0,
        layer: int = 0,
        backend: str = "cpu",
        kv_rotation: Optional[str] = None,
    ) -> None: ...
    def append(self, k: npt.NDArray[np.float32], v: npt.NDArray[np.float32]) -> None:
        """k, v [n, n_kv_heads, head_dim]; on error the cache is as it was."""
    def rotate_queries(self, q: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """A copy of q [t_q, n_heads, head_dim] rotated as the last t_q appended tokens' keys were."""
    def attend(
        self, q: npt.NDArray[np.float32], *, sinks: Optional[npt.NDArray[np.float32]] = None
    ) -> npt.NDArray[np.float32]:
        """The queries of the last t_q appended tokens, q [t_q, n_heads, head_dim] (rotate_queries applied)."""
    def reset(self, start: int = 0) -> None: ...
    def truncate(self, tokens: int) -> None:
        """Keeps the first `tokens` appended since the reset; OutOfRange past size, FailedPrecondition where a
        sliding-window ring no longer holds what a later query would see (the cache unchanged)."""
    @property
    def size(self) -> int: ...
    @property
    def position(self) -> int: ...
    @property
    def start_position(self) -> int: ...
    @property
    def rows(self) -> int: ...
    @property
    def plan(self) -> dict[str, Any]: ...

class Session:
    def __init__(
        self,
        *,
        preset: Optional[str] = None,
        config: Optional[str] = None,
        gguf: Optional[str] = None,
        spec: Optional[str] = None,
        weights: Optional[Sequence[dict[str, npt.NDArray[Any]]]] = None,
        seed: Optional[int] = None,
        kv_dtype: Optional[str] = None,
        threads: int = 1,
        max_tokens: int = 0,
        weight_dtype: Optional[str] = None,
        backend: str = "cpu",
        kv_rotation: Optional[str] = None,
    ) -> None: ...
    def prefill(self, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """x [t, d_model] at positions position()..; returns y [t, d_model]."""
    def decode(self, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """One token: x [d_model]; returns y [d_model]."""
    def encode(self, x: npt.NDArray[np.float32], seq_lens: Sequence[int]) -> npt.NDArray[np.float32]:
        """A bidirectional model's batch of sentences back to back in x [sum(seq_lens), d_model]."""
    def reset(self) -> None: ...
    @property
    def position(self) -> int: ...
    @property
    def n_layers(self) -> int: ...
    @property
    def plan(self) -> dict[str, Any]: ...

class Tokenizer:
    def __init__(
        self,
        *,
        gguf: Optional[str] = None,
        tokenizer_json: Optional[str] = None,
        model_dir: Optional[str] = None,
    ) -> None:
        """The tokenizer of exactly one of a GGUF file, a tokenizer.json, a model directory."""
    def encode(self, text: str, add_special: bool = True) -> list[int]:
        """Token ids of text; add_special adds the file's BOS / [CLS] ... [SEP]."""
    def decode(self, ids: Sequence[int], skip_special: bool = True) -> str: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def bos_id(self) -> Optional[int]: ...
    @property
    def eos_id(self) -> Optional[int]: ...

class _Model:
    """headway.Model's base: a whole decoder from a GGUF file over one arena it owns."""
    def __init__(
        self,
        *,
        gguf: str,
        kv_dtype: str = "f16",
        weight_dtype: str = "f32",
        threads: int = 1,
        ctx: Optional[int] = None,
        kv_rotation: str = "none",
    ) -> None: ...
    def logits(self, ids: Sequence[int]) -> npt.NDArray[np.float32]:
        """A fresh sequence: the next-token logits after each of ids, [len(ids), vocab_size]."""
    def _start(
        self,
        prompt: Optional[str],
        ids: Optional[Sequence[int]],
        max_tokens: int,
        temperature: float,
        top_k: int,
        top_p: float,
        min_p: float,
        repeat_penalty: float,
        seed: int,
        chat: bool,
    ) -> int: ...
    def _next(self, ticket: int) -> Optional[str]: ...
    def tokenize(self, text: str) -> list[int]:
        """The file's tokenizer, as `headway generate --prompt` uses it."""
    def detokenize(self, ids: Sequence[int]) -> str:
        """Text of ids, special tokens left out."""
    def reset(self) -> None: ...
    @property
    def position(self) -> int: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def ctx(self) -> int: ...
