"""Bad input raises the headway.Error subclass of the library's Status code, with a message
that names the field and the value; the ValueError ones are also ValueErrors."""

import numpy as np
import pytest

import headway

Q = np.zeros((4, 4, 16), dtype=np.float32)
K = np.zeros((6, 2, 16), dtype=np.float32)


def test_class_tree():
    for cls in (headway.InvalidArgument, headway.OutOfRange, headway.Unsupported, headway.NotFound, headway.DataLoss):
        assert issubclass(cls, headway.Error) and issubclass(cls, ValueError)
    for cls in (headway.FailedPrecondition, headway.InternalError):
        assert issubclass(cls, headway.Error) and issubclass(cls, RuntimeError)


@pytest.mark.parametrize(
    "call,cls,message",
    [
        (lambda: headway.attend(Q[0], K, K), headway.InvalidArgument, r"q: shape \(4, 16\) has 2 dims, expected 3"),
        (lambda: headway.attend(Q, K, K[:, :1].copy()), headway.InvalidArgument, "k and v shapes differ"),
        (
            lambda: headway.attend(np.zeros((4, 3, 16), np.float32), K, K),
            headway.InvalidArgument,
            "q has 3 query heads and k 2 kv heads: 3 is not divisible by 2",
        ),
        (lambda: headway.attend(Q, K[:, :, :8].copy(), K[:, :, :8].copy()), headway.InvalidArgument, "head_dim differs: q has 16"),
        (
            lambda: headway.attend(np.zeros((4, 4, 0), np.float32), np.zeros((6, 2, 0), np.float32), np.zeros((6, 2, 0), np.float32)),
            headway.InvalidArgument,
            "head_dim 0",
        ),
        (lambda: headway.attend(Q[:, ::2], K, K), headway.InvalidArgument, r"q: not C-contiguous.*ascontiguousarray"),
        (lambda: headway.attend(Q, K.astype(np.float64), K), headway.InvalidArgument, "k: dtype float64"),
        (lambda: headway.attend(Q.astype(np.float16), K, K), headway.InvalidArgument, "q: dtype float16, expected float32"),
        (lambda: headway.attend([[1.0]], K, K), headway.InvalidArgument, "q: expected a NumPy array"),
        (
            lambda: headway.attend(Q, K, K, kv_dtype="f8"),
            headway.InvalidArgument,
            "kv_dtype 'f8' is not one of f32, f16, bf16, q8_0, q4_0",
        ),
        (lambda: headway.attend(Q, K, K, threads=0), headway.InvalidArgument, "threads 0"),
        (lambda: headway.attend(Q, K, K, window=-1), headway.InvalidArgument, "window -1 is out of range"),
        (lambda: headway.attend(Q, K, K, sinks=np.zeros(3, np.float32)), headway.InvalidArgument, "sinks: shape"),
        (
            lambda: headway.attend(Q, K, K, mask=np.ones((6, 4), bool)),
            headway.InvalidArgument,
            r"mask: shape \(6, 4\), expected \(4, 6\)",
        ),
        (lambda: headway.attend(Q, K, K, seq_lens=[2, 2]), headway.InvalidArgument, "give kv_seq_lens"),
        (lambda: headway.attend(Q, K, K, backend="tpu"), headway.InvalidArgument, "backend 'tpu' is not one of cpu, gpu"),
        (lambda: headway.plan(preset="nope"), headway.NotFound, "no preset named 'nope'"),
        (lambda: headway.plan(), headway.InvalidArgument, r"give exactly one of .*\(got 0\)"),
        (lambda: headway.plan(spec="d_model=800 heads=12"), headway.InvalidArgument, "800 is not divisible"),
        (lambda: headway.plan(config="/nonexistent/config.json"), headway.NotFound, "config.json"),
        (
            lambda: headway.plan(preset="llama-3-8b", kv_rotation="hadamard"),
            headway.InvalidArgument,
            "kv_rotation hadamard needs kv_dtype q8_0 or q4_0, not kv_dtype f16",
        ),
        (
            lambda: headway.plan(preset="llama-3-8b", kv_dtype="q8_0", kv_rotation="walsh"),
            headway.InvalidArgument,
            "kv_rotation 'walsh' is not one of none, hadamard",
        ),
    ],
)
def test_bad_input(call, cls, message):
    with pytest.raises(cls, match=message) as info:
        call()
    assert isinstance(info.value, ValueError)
    assert info.value.code == {headway.InvalidArgument: "invalid argument", headway.NotFound: "not found"}[cls]


def test_library_message_is_verbatim():
    # attend()'s own check (not the binding's): the same text the CLI prints after "headway attend: "
    with pytest.raises(headway.InvalidArgument) as info:
        headway.attend(Q, K, K, window=2, sink_tokens=4)
    assert "sink_tokens" in str(info.value) or "sink tokens" in str(info.value)
