# Run by hand (not in CI), from the repository root:
#     python3 -m venv /tmp/pyref && /tmp/pyref/bin/pip install torch==2.15.0 transformers==5.23.0 \
#         onnx==1.23.2 onnxscript==0.7.2 onnxruntime==1.31.1 numpy==2.4.6   # Python 3.11.7
#     /tmp/pyref/bin/python model/testdata/dynamoqwen3/make_fixture.py
# It rewrites model.onnx, config.json and parameters.json in this folder.
#
# What it makes: the same tiny random-weight transformers.Qwen3ForCausalLM
# as ../hfqwen3 (head_dim 24, 2 KV heads, tied embeddings), exported with
# PyTorch's default exporter now, torch.onnx.export(..., dynamo=True), at
# opset 18, with the optimum signature (input_ids, attention_mask,
# position_ids, past_key_values.{i}.key|value -> logits, present.*).
# This exporter keeps model buffers such as rotary_emb.inv_freq as
# initializers, so the fixture checks that spiral trains exactly
# model.named_parameters(): parameters.json lists their names and shapes as
# transformers reports them, and which ONNX initializers hold them.
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "hfqwen3"))
import make_fixture as hf  # noqa: E402  (the shared model definition)

OPSET = 18


def export(cfg, model, path):
    b, s, p = 2, 5, 3
    g = torch.Generator().manual_seed(hf.SEED + 1)
    ids = torch.randint(0, cfg.vocab_size, (b, s), generator=g)
    mask = torch.ones(b, p + s, dtype=torch.int64)
    pos = torch.arange(p, p + s, dtype=torch.int64).expand(b, s).contiguous()
    past = []
    for _ in range(cfg.num_hidden_layers):
        for _ in range(2):
            past.append(torch.randn(b, cfg.num_key_value_heads, p, cfg.head_dim, generator=g))
    ins, outs, _ = hf.io_names(cfg)
    batch = torch.export.Dim("batch_size", min=1, max=1024)
    seq = torch.export.Dim("sequence_length", min=1, max=4096)
    past_len = torch.export.Dim("past_sequence_length", min=0, max=4096)
    total = torch.export.Dim("total_sequence_length", min=1, max=8192)
    shapes = [{0: batch, 1: seq}, {0: batch, 1: total}, {0: batch, 1: seq}]
    # torch.export sees forward(input_ids, attention_mask, position_ids, *past):
    # the varargs are one tuple.
    shapes.append(tuple({0: batch, 2: past_len} for _ in range(2 * cfg.num_hidden_layers)))
    model.eval()
    with torch.no_grad():
        prog = torch.onnx.export(
            hf.FlatPast(cfg, model),
            (ids, mask, pos, *past),
            input_names=ins,
            output_names=outs,
            dynamic_shapes=tuple(shapes),
            opset_version=OPSET,
            dynamo=True,
            external_data=False,
        )
    prog.save(path, external_data=False)
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    return m


def main():
    cfg, model = hf.build_model()
    path = os.path.join(HERE, "model.onnx")
    m = export(cfg, model, path)
    cfg.save_pretrained(HERE)

    # Which initializer holds each parameter: match by value (names differ
    # between exporters; a tied weight is one parameter).
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer}
    params = []
    for name, p in model.named_parameters():
        v = p.detach().numpy()
        holders = sorted(n for n, a in inits.items() if a.shape == v.shape and np.array_equal(a, v))
        holders_t = sorted(n for n, a in inits.items() if a.ndim == 2 and a.T.shape == v.shape and np.array_equal(a.T, v))
        params.append({"name": name, "shape": list(v.shape), "initializers": holders, "transposed_initializers": holders_t})
    buffers = [{"name": n, "shape": list(b.shape)} for n, b in model.named_buffers()]
    float_inits = sorted(n for n, a in inits.items() if a.dtype.kind == "f")

    # onnxruntime agrees with transformers on a padded prefill.
    ids, mask, pos, *_ = hf.padded_inputs(cfg)
    with torch.no_grad():
        want = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False).logits.numpy()
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    B = ids.shape[0]
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "position_ids": pos.numpy()}
    empty = np.zeros((B, cfg.num_key_value_heads, 0, cfg.head_dim), np.float32)
    for i in range(cfg.num_hidden_layers):
        feeds[f"past_key_values.{i}.key"] = empty
        feeds[f"past_key_values.{i}.value"] = empty
    got = sess.run(["logits"], feeds)[0]
    real = mask.numpy().astype(bool)
    err = float(np.abs(got - want)[real].max())
    print(f"onnxruntime vs transformers (real positions): {err:.3g}")
    assert err < 1e-4, err

    out = {
        "about": "named_parameters() of the transformers model exported to model.onnx by make_fixture.py (dynamo exporter)",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "onnx": onnx.__version__},
        "parameters": params,
        "buffers": buffers,
        "float_initializers": float_inits,
        "onnxruntime_vs_transformers_max_abs_err": err,
    }
    with open(os.path.join(HERE, "parameters.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(json.dumps(out, indent=1)[:3000])


if __name__ == "__main__":
    main()
