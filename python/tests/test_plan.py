"""headway.plan() is the object `headway plan --json` prints, key for key; presets() is the
CLI's list."""

import json
import subprocess

import pytest

import headway
from conftest import headway_cli

SOURCES = [
    ({"preset": "llama-2-7b"}, ["--preset", "llama-2-7b"]),
    ({"preset": "gemma-2-2b", "kv_dtype": "q8_0", "threads": 4}, ["--preset", "gemma-2-2b", "--kv-dtype", "q8_0", "--threads", "4"]),
    ({"preset": "gpt-oss-20b", "max_tokens": 64}, ["--preset", "gpt-oss-20b", "--max-tokens", "64"]),
    ({"preset": "qwen3-0.6b", "weight_dtype": "bf16"}, ["--preset", "qwen3-0.6b", "--weight-dtype", "bf16"]),
    ({"preset": "llama-3-8b", "kv_dtype": "q4_0", "kv_rotation": "hadamard"}, ["--preset", "llama-3-8b", "--kv-dtype", "q4_0", "--kv-rotate"]),
    (
        {"spec": "d_model=256 heads=4 ctx=4096 layers=8 rope_theta=1e6 window=64 sliding_pattern=2 nope_interval=4"},
        ["--spec", "d_model=256 heads=4 ctx=4096 layers=8 rope_theta=1e6 window=64 sliding_pattern=2 nope_interval=4"],
    ),
]


@pytest.mark.parametrize("kwargs,flags", SOURCES)
def test_plan_equals_cli_json(kwargs, flags):
    out = subprocess.run([headway_cli(), "plan", *flags, "--json"], check=True, capture_output=True, text=True)
    assert headway.plan(**kwargs) == json.loads(out.stdout)


def test_presets_match_cli():
    names = headway.presets()
    assert "llama-2-7b" in names and len(names) == len(set(names))
    out = subprocess.run([headway_cli(), "presets"], check=True, capture_output=True, text=True).stdout
    for name in names:
        assert name in out


def test_version():
    assert headway.__version__.count(".") == 2
