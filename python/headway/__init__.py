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

backend="gpu" runs on the Vulkan backend when the build has it (gpu_compiled()); otherwise, or
without a usable device, it raises Unsupported with the reason.
"""

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
    Unsupported,
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
    "Session",
    "Unsupported",
    "__version__",
    "attend",
    "gpu_compiled",
    "plan",
    "presets",
]
