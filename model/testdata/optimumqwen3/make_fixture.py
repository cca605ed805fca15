# Run by hand (not in CI), from the repository root:
#     python3 -m venv /tmp/pyoptimum && /tmp/pyoptimum/bin/pip install torch==2.15.0 \
#         "transformers==4.57.*" optimum==2.1.0 optimum-onnx==0.1.0 onnx==1.23.2 \
#         onnxruntime==1.31.1 numpy==2.4.6 safetensors==0.8.0      # Python 3.11.7
#     /tmp/pyoptimum/bin/python model/testdata/optimumqwen3/make_fixture.py
# (optimum-onnx 0.1.0 needs transformers < 4.58, hence its own venv.)
# It rewrites model.onnx, config.json, parameters.json and gradients.safetensors here.
#
# What it makes: a tiny random-weight transformers.Qwen3ForCausalLM (the
# config of ../hfqwen3: head_dim 24 != 64/4, 2 KV heads, tied embeddings)
# exported by Hugging Face optimum itself (optimum.exporters.onnx.main_export,
# task text-generation-with-past, opset 18), the way users export real models.
# Optimum's export zeroes the softmax of fully masked rows with a
# Where(IsNaN(p), 0, p) guard, which a left-padded row exercises.
#
# gradients.safetensors holds PyTorch's gradients (autograd, float32 model,
# loss in float64) of the policy-gradient loss at ratio 1 on a left-padded batch:
#     loss = -sum_t A[b,t] m[b,t] log p(ids[b,t+1] | ids[b,..t]) / sum m
# with m = 1 on the real positions that have a next token, A given in
# parameters.json; one float32 tensor per parameter, keyed by the ONNX
# initializer that holds it as is (else by the one holding its transpose,
# transposed), as parameters.json maps them.
import json
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
import torch
import transformers
from safetensors.numpy import save_file
from transformers import Qwen3Config, Qwen3ForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 20240607
OPSET = 18
CONFIG = dict(
    vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, head_dim=24, max_position_embeddings=256,
    rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=True, attention_bias=False,
    hidden_act="silu", use_sliding_window=False, initializer_range=0.25,
)
# Left-padded batch: rows of 7, 4 and 2 real tokens.
PROMPT_LENS = [7, 4, 2]
PAD_ID = 0


def build_model():
    torch.manual_seed(SEED)
    cfg = Qwen3Config(**CONFIG)
    model = Qwen3ForCausalLM(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
    return cfg, model


def batch(cfg):
    g = torch.Generator().manual_seed(SEED + 2)
    T, B = max(PROMPT_LENS), len(PROMPT_LENS)
    ids = torch.full((B, T), PAD_ID, dtype=torch.int64)
    mask = torch.zeros(B, T, dtype=torch.int64)
    for r, n in enumerate(PROMPT_LENS):
        ids[r, T - n:] = torch.randint(1, cfg.vocab_size, (n,), generator=g)
        mask[r, T - n:] = 1
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    loss_mask = torch.zeros(B, T, dtype=torch.float64)
    loss_mask[:, :-1] = (mask[:, :-1] * mask[:, 1:]).double()
    adv = torch.randn(B, T, generator=g, dtype=torch.float64)
    return ids, mask, pos, loss_mask, adv


def main():
    cfg, model = build_model()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "hf")
        model.save_pretrained(src)
        from optimum.exporters.onnx import main_export
        out = os.path.join(tmp, "onnx")
        main_export(src, out, task="text-generation-with-past", opset=OPSET, do_validation=False,
                    no_post_process=True, library_name="transformers")
        m = onnx.load(os.path.join(out, "model.onnx"))
    onnx.checker.check_model(m, full_check=True)
    path = os.path.join(HERE, "model.onnx")
    onnx.save(m, path, save_as_external_data=False)
    cfg.save_pretrained(HERE)

    ids, mask, pos, loss_mask, adv = batch(cfg)
    # PyTorch gradients (autograd, eager attention, float32: transformers'
    # float64 eager path turns the padded rows' logits into NaN).
    ref = Qwen3ForCausalLM(cfg)
    ref.load_state_dict(model.state_dict())
    ref.eval()
    ref.config._attn_implementation = "eager"
    logits = ref(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False).logits.double()
    assert not torch.isnan(logits).any()
    lp = torch.log_softmax(logits, -1)
    nxt = torch.cat([ids[:, 1:], torch.zeros_like(ids[:, :1])], 1)
    tok = lp.gather(-1, nxt.unsqueeze(-1)).squeeze(-1)
    loss = -(adv * loss_mask * tok).sum() / loss_mask.sum()
    loss.backward()

    inits = {t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer}
    params, grads = [], {}
    for name, p in model.named_parameters():
        v = p.detach().numpy()
        g = dict(ref.named_parameters())[name].grad.numpy()
        direct = sorted(n for n, a in inits.items() if a.shape == v.shape and np.array_equal(a, v))
        trans = sorted(n for n, a in inits.items() if a.ndim == 2 and a.T.shape == v.shape and np.array_equal(a.T, v))
        # One entry per parameter, under the initializer that holds it as
        # is (else transposed), in float32.
        if direct:
            grads[direct[0]] = g.astype(np.float32)
        elif trans:
            grads[trans[0]] = np.ascontiguousarray(g.T).astype(np.float32)
        params.append({"name": name, "shape": list(v.shape), "initializers": direct, "transposed_initializers": trans})
    save_file(grads, os.path.join(HERE, "gradients.safetensors"))

    # onnxruntime agrees with transformers on the real positions.
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
    if any(i.name == "position_ids" for i in sess.get_inputs()):
        feeds["position_ids"] = pos.numpy()
    for i in sess.get_inputs():
        if i.name.startswith("past_key_values."):
            feeds[i.name] = np.zeros((ids.shape[0], cfg.num_key_value_heads, 0, cfg.head_dim), np.float32)
    got = sess.run(["logits"], feeds)[0]
    with torch.no_grad():
        want = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False).logits.numpy()
    real = mask.numpy().astype(bool)
    err = float(np.abs(got - want)[real].max())
    print(f"onnxruntime vs transformers (real positions): {err:.3g}")
    assert err < 1e-4, err
    ops = sorted({n.op_type for n in m.graph.node})
    with open(os.path.join(HERE, "parameters.json"), "w") as f:
        json.dump({
            "about": "optimum export of a tiny Qwen3 and PyTorch float64 gradients of a ratio-1 policy-gradient loss on a left-padded batch (make_fixture.py)",
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "onnx": onnx.__version__,
                         "onnxruntime": ort.__version__, "python": sys.version.split()[0]},
            "parameters": params, "ops": ops,
            "input_ids": ids.tolist(), "attention_mask": mask.tolist(), "position_ids": pos.tolist(),
            "loss_mask": loss_mask.tolist(), "advantages": adv.tolist(), "loss": loss.item(),
            "onnxruntime_vs_transformers_max_abs_err": err,
        }, f, indent=1)
        f.write("\n")
    print("ops:", ops)
    print("loss", loss.item())


if __name__ == "__main__":
    main()
