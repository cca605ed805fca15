"""Write a random-weight ONNX export of a real Qwen3 configuration.

The reference side of spiral's scale benchmarks (see `make bench-scale`):
the model spiral trains in the benchmark is what a user gets from Hugging
Face optimum, with the shapes of the real model and random weights (the
weights do not change time or memory, and no model hub is reachable here).

Run by hand (not in CI) from the repository root, in a venv with:
    pip install torch==2.15.0 "transformers==4.57.*" optimum==2.1.0 \
        optimum-onnx==0.1.0 onnx==1.23.2 onnxruntime==1.31.1
    python scripts/bench/make_model.py --config qwen3-0.6b --out bench/qwen3-0.6b
    python scripts/bench/make_model.py --config qwen3-0.6b --layers 8 --out bench/qwen3-0.6b-8l

It writes OUT/model.onnx (+ model.onnx_data), OUT/config.json and
OUT/torch (the same weights as a transformers checkpoint, for
torch_train_step.py). Optimum writes the tied LM head as a second copy of
the embedding; spiral ties it back (see lmgraph.FindTies).
"""
import argparse
import os
import shutil
import tempfile

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

# The architecture hyper-parameters of the released Qwen3 checkpoints
# (config.json of Qwen/Qwen3-0.6B, -1.7B, -4B, -8B), as `spiral init-model
# --config` writes them (model/qwen3/releases.go); Qwen/Qwen3-4B-Instruct-2507
# is qwen3-4b with max_position_embeddings=262144, rope_theta=5000000.0.
CONFIGS = {
    "qwen3-0.6b": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                       num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, rope_theta=1000000.0),
    "qwen3-1.7b": dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28, num_attention_heads=16,
                       num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, rope_theta=1000000.0),
    "qwen3-4b": dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, rope_theta=1000000.0),
    "qwen3-8b": dict(hidden_size=4096, intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, rope_theta=1000000.0,
                     tie_word_embeddings=False),
}
COMMON = dict(vocab_size=151936, rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=False,
              hidden_act="silu", use_sliding_window=False, torch_dtype="float32")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, choices=sorted(CONFIGS))
    ap.add_argument("--layers", type=int, default=0, help="override num_hidden_layers (0: the real count)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    kw = dict(COMMON, **CONFIGS[args.config])
    if args.layers:
        kw["num_hidden_layers"] = args.layers
    torch.manual_seed(args.seed)
    cfg = Qwen3Config(**kw)
    model = Qwen3ForCausalLM(cfg).eval()
    os.makedirs(args.out, exist_ok=True)
    hf_dir = os.path.join(args.out, "torch")
    model.save_pretrained(hf_dir, safe_serialization=True)
    del model

    from optimum.exporters.onnx import main_export

    with tempfile.TemporaryDirectory() as tmp:
        main_export(hf_dir, output=tmp, task="text-generation-with-past", opset=18, device="cpu",
                    no_post_process=True, do_validation=False)
        # model.onnx last, under a temporary name first (the move may copy
        # across file systems): scale.sh takes OUT/model.onnx as a finished
        # export, so it must not stand beside a half-copied model.onnx_data.
        for name in sorted(os.listdir(tmp), key=lambda n: n == "model.onnx"):
            if name.startswith("model.onnx") or name == "config.json":
                dst = os.path.join(args.out, name)
                shutil.move(os.path.join(tmp, name), dst + ".tmp")
                os.replace(dst + ".tmp", dst)
    print(f"wrote {args.out}: {cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, vocab {cfg.vocab_size}")


if __name__ == "__main__":
    main()
