# Run by hand (not in CI), from the repository root:
#     pip install torch transformers onnx onnxruntime numpy safetensors
#     python3 model/testdata/hfqwen2/make_fixture.py
# (the versions used are recorded in reference.json)
# It rewrites model.onnx, config.json, weights.safetensors and
# reference.json in this folder; model/hfexport_test.go checks that
# `spiral export --format hf` of model.onnx writes weights.safetensors'
# tensors, and model/lm_fixture_test.go that model.LM reproduces
# reference.json.
#
# What it makes: a tiny random-weight transformers.Qwen2ForCausalLM (the
# architecture of Qwen2 and Qwen2.5: a bias on the q, k and v projections,
# no q/k norms; an untied LM head) exported to ONNX as ../hfqwen3 is
# (PyTorch's TorchScript exporter, optimum's layout, opset 18). The biases,
# which transformers starts at zero, are drawn at random so that a lost or
# misplaced bias changes the logits. weights.safetensors is the state dict
# transformers' save_pretrained writes for the model (its names, layouts
# and values); reference.json holds transformers' own logits, as
# ../hfqwen3's does.
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import safetensors.torch
import torch
import transformers
from transformers import Qwen2Config, Qwen2ForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "hfqwen3"))
import make_fixture as qwen3fixture  # noqa: E402  (the export and inputs of ../hfqwen3)

SEED = 20261206
CONFIG = dict(
    vocab_size=40, hidden_size=24, intermediate_size=32, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
    rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=False,
    hidden_act="silu", use_sliding_window=False, initializer_range=0.25,
)


def build_model():
    torch.manual_seed(SEED)
    cfg = Qwen2Config(**CONFIG)
    cfg._attn_implementation = "eager"
    model = Qwen2ForCausalLM(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.5 * torch.randn_like(p))
    biases = sorted(n for n, _ in model.named_parameters() if n.endswith(".bias"))
    assert biases == [f"model.layers.{i}.self_attn.{p}_proj.bias" for i in range(2) for p in "kqv"], biases
    assert model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr(), "embeddings tied"
    cfg.head_dim = cfg.hidden_size // cfg.num_attention_heads  # what ../hfqwen3's export reads
    return cfg, model


def main():
    cfg, model = build_model()
    path = os.path.join(HERE, "model.onnx")
    qwen3fixture.export(cfg, model, path)
    del cfg.head_dim
    cfg.save_pretrained(HERE)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    safetensors.torch.save_file(state, os.path.join(HERE, "weights.safetensors"), metadata={"format": "pt"})
    names = {i.name for i in onnx.load(path).graph.initializer}
    kept = sorted(n for n in names if n.endswith(".bias"))
    print("bias initializers in the export:", kept)

    qwen3fixture.PROMPT_LENS = [5, 3, 1]
    ids, mask, pos, nxt, next_mask, next_pos = qwen3fixture.padded_inputs(cfg)
    B, T = ids.shape
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True)
        prefill = out.logits
        step = model(input_ids=nxt, attention_mask=next_mask, position_ids=next_pos, use_cache=True,
                     **{qwen3fixture.cache_kwarg(model): qwen3fixture.out_cache(out)}).logits
    real = mask.bool().numpy()
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    hd = CONFIG["hidden_size"] // CONFIG["num_attention_heads"]
    empty = np.zeros((B, cfg.num_key_value_heads, 0, hd), np.float32)
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "position_ids": pos.numpy()}
    for i in range(cfg.num_hidden_layers):
        feeds[f"past_key_values.{i}.key"] = empty
        feeds[f"past_key_values.{i}.value"] = empty
    d_prefill = np.abs(sess.run(["logits"], feeds)[0] - prefill.numpy())[real].max()
    print(f"onnxruntime vs transformers: prefill {d_prefill:.3g}")
    assert d_prefill < 1e-4, d_prefill

    ref = {
        "about": "Reference logits from transformers Qwen2ForCausalLM (eager, fp32) for model.onnx; made by make_fixture.py.",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "onnxruntime": ort.__version__, "onnx": onnx.__version__, "python": sys.version.split()[0]},
        "seed": SEED,
        "config": {**{k: CONFIG[k] for k in ("vocab_size", "hidden_size", "num_hidden_layers",
                                             "num_attention_heads", "num_key_value_heads")}, "head_dim": hd},
        "batch": B, "seq": T, "vocab": cfg.vocab_size, "prompt_lens": qwen3fixture.PROMPT_LENS,
        "input_ids": ids.tolist(), "attention_mask": mask.tolist(), "position_ids": pos.tolist(),
        "prefill_logits_shape": list(prefill.shape),
        "prefill_logits": [round(x, 7) for x in prefill.flatten().tolist()],
        "next_input_ids": nxt.tolist(), "next_attention_mask": next_mask.tolist(), "next_position_ids": next_pos.tolist(),
        "step_logits_shape": list(step.shape),
        "step_logits": [round(x, 7) for x in step.flatten().tolist()],
    }
    with open(os.path.join(HERE, "reference.json"), "w") as f:
        json.dump(ref, f)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(HERE, n)) for n in ("model.onnx", "config.json", "weights.safetensors", "reference.json"))
    print(f"wrote {HERE}: {total} bytes")
    assert total < 200_000


if __name__ == "__main__":
    main()
