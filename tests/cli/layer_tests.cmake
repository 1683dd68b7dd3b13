# headway layer: flag and file errors that need no weights (exit 2, the message names the flag,
# the file or the value). Cases over real weight files are in tests/formats/weights_file_test.cc and the
# PyTorch check (tests/torch/).
headway_cli_test(layer-help 0 "usage: headway layer --weights" layer --help)
headway_cli_test(layer-no-weights 2 "--weights is required \\(a .safetensors or .gguf file\\)"
  layer --layer 0 --x x.npy --out y.npy)
headway_cli_test(layer-no-layer 2 "--layer is required" layer --weights w.safetensors --x x.npy --out y.npy)
headway_cli_test(layer-no-x 2 "--x is required \\(an .npy of \\[T, d_model\\] f32\\)"
  layer --weights w.safetensors --layer 0 --out y.npy)
headway_cli_test(layer-no-out 2 "--out is required" layer --weights w.safetensors --layer 0 --x x.npy)
headway_cli_test(layer-bad-layer 2 "--layer -1 is not a whole number"
  layer --weights w.safetensors --layer -1 --x x.npy --out y.npy)
headway_cli_test(layer-bad-projection 2 "--projection cuda is not one of highway, xnnpack"
  layer --weights w.safetensors --layer 0 --x x.npy --out y.npy --projection cuda)
headway_cli_test(layer-bad-kv-dtype 2 "--kv-dtype f8 is not one of f32, f16, bf16"
  layer --weights w.safetensors --layer 0 --x x.npy --out y.npy --kv-dtype f8)
headway_cli_test(layer-unknown-flag 2 "unknown argument --mlp" layer --weights w.safetensors --mlp)
headway_cli_test(layer-missing-weights 2 "cannot open no-such.safetensors: No such file or directory"
  layer --weights no-such.safetensors --layer 0 --x x.npy --out y.npy)
headway_cli_test(layer-config-as-weights 2 "llama-2-7b.json: safetensors header length [0-9]+ is more than"
  layer --weights ${data}/hf/llama-2-7b.json --config ${data}/hf/llama-2-7b.json --layer 0 --x x.npy --out y.npy)
headway_cli_test(layer-bad-backend 2 "--backend npu is not one of cpu, gpu"
  layer --weights w.safetensors --layer 0 --x x.npy --out y.npy --backend npu)
headway_cli_test(layer-seq-lens-start-pos 2 "--start-pos 3 with --seq-lens: each sequence of a packed batch starts at"
  layer --weights w.safetensors --layer 0 --x x.npy --out y.npy --seq-lens 2,2 --start-pos 3)
