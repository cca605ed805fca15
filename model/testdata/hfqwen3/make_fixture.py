# Run by hand (not in CI), from the repository root:
#     pip install torch==2.15.0 transformers==5.24.0 onnxruntime==1.32.0 onnx==1.23.2 numpy==2.4.6  # Python 3.11.7
#     python3 model/testdata/hfqwen3/make_fixture.py
# It rewrites model.onnx, config.json and reference.json in this folder;
# model/lm_fixture_test.go checks that model.LM reproduces reference.json.
#
# What it makes: a tiny random-weight transformers.Qwen3ForCausalLM
# (head_dim 24 != hidden 64 / 4 heads, 2 KV heads, tied embeddings) exported
# to ONNX the way Hugging Face optimum exports text-generation-with-past:
# PyTorch's TorchScript exporter (dynamo=False), opset 18, inputs input_ids,
# attention_mask, position_ids (int64) and past_key_values.{i}.key|value
# [batch, kv_heads, past, head_dim]; outputs logits and present.{i}.key|value.
# Like optimum, it traces with a non-empty past and checks with onnxruntime
# that a zero-length past (the first step) works too.
#
# The reference logits come from transformers itself (eager attention, fp32),
# never from the ONNX graph, so the Go test compares two independent
# implementations: a left-padded batch of three prompts run full-sequence
# without a cache, then one decode step per row with the cache.
import inspect
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
import transformers
from torch import nn
from transformers import DynamicCache, Qwen3Config, Qwen3ForCausalLM

OUT = os.path.dirname(os.path.abspath(__file__))
SEED = 20240607
OPSET = 18

# Config: every size distinct so that a transposed or mislabelled axis shows.
CONFIG = dict(
    vocab_size=128,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=24,
    max_position_embeddings=256,
    rms_norm_eps=1e-6,
    rope_theta=10000.0,
    tie_word_embeddings=True,
    attention_bias=False,
    hidden_act="silu",
    use_sliding_window=False,
    # Larger than HF's 0.02 so that logits are O(1) and a 1e-4 tolerance
    # is a real test, not a bound on numbers that are all tiny.
    initializer_range=0.25,
)

# The padded batch: three prompts of lengths 7, 4 and 2, left-padded to 7.
PROMPT_LENS = [7, 4, 2]
# Padded input_ids positions hold this id (any valid id; excluded from checks).
PAD_ID = 0


def build_model():
    torch.manual_seed(SEED)
    cfg = Qwen3Config(**CONFIG)
    cfg._attn_implementation = "eager"
    model = Qwen3ForCausalLM(cfg).eval()
    # RMSNorm weights start at 1; randomise them so that a missing or
    # misplaced norm (notably the per-head q/k norms) changes the logits.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
    # Check what transformers actually used (argument names changed across
    # releases: rope_theta became rope_parameters in transformers 5).
    rope = getattr(cfg, "rope_parameters", None) or {}
    theta = rope.get("rope_theta", getattr(cfg, "rope_theta", None))
    assert theta == CONFIG["rope_theta"], f"rope theta {theta}"
    assert cfg.head_dim == 24 and cfg.hidden_size // cfg.num_attention_heads == 16
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr(), "embeddings not tied"
    return cfg, model


def cache_kwarg(model):
    """The forward argument that takes the cache: transformers 5.x renamed
    past_key_values to cache (the old name is deprecated until 5.40)."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def out_cache(out):
    """The cache a forward returned (out.cache in transformers 5.x)."""
    return out.cache if hasattr(out, "cache") else out.past_key_values


def cache_from_flat(cfg, flat):
    """DynamicCache holding layer i's (key, value) = flat[2i], flat[2i+1]."""
    cache = DynamicCache()
    for i in range(cfg.num_hidden_layers):
        cache.update(flat[2 * i], flat[2 * i + 1], i)
    return cache


def flat_from_cache(cfg, cache):
    out = []
    for i in range(cfg.num_hidden_layers):
        if hasattr(cache, "layers"):  # transformers >= 4.56
            out += [cache.layers[i].keys, cache.layers[i].values]
        else:
            out += [cache.key_cache[i], cache.value_cache[i]]
    return out


class FlatPast(nn.Module):
    """The optimum interface: flat past tensors in, logits and flat presents out."""

    def __init__(self, cfg, model):
        super().__init__()
        self.cfg, self.model = cfg, model

    def forward(self, input_ids, attention_mask, position_ids, *past):
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=True,
            **{cache_kwarg(self.model): cache_from_flat(self.cfg, list(past))},
            return_dict=True,
        )
        return (out.logits, *flat_from_cache(self.cfg, out_cache(out)))


def io_names(cfg):
    ins = ["input_ids", "attention_mask", "position_ids"]
    outs = ["logits"]
    axes = {
        "input_ids": {0: "batch_size", 1: "sequence_length"},
        "attention_mask": {0: "batch_size", 1: "past_sequence_length + sequence_length"},
        "position_ids": {0: "batch_size", 1: "sequence_length"},
        "logits": {0: "batch_size", 1: "sequence_length"},
    }
    for i in range(cfg.num_hidden_layers):
        for kv in ("key", "value"):
            ins.append(f"past_key_values.{i}.{kv}")
            outs.append(f"present.{i}.{kv}")
            axes[ins[-1]] = {0: "batch_size", 2: "past_sequence_length"}
            axes[outs[-1]] = {0: "batch_size", 2: "past_sequence_length + sequence_length"}
    return ins, outs, axes


def export(cfg, model, path):
    # Trace with batch 2, sequence 5 and a non-empty past of 3 (as optimum
    # does), so that no length is specialised to 0 or 1.
    b, s, p = 2, 5, 3
    g = torch.Generator().manual_seed(SEED + 1)
    ids = torch.randint(0, cfg.vocab_size, (b, s), generator=g)
    mask = torch.ones(b, p + s, dtype=torch.int64)
    pos = torch.arange(p, p + s, dtype=torch.int64).expand(b, s).contiguous()
    past = []
    for _ in range(cfg.num_hidden_layers):
        for _ in range(2):
            past.append(torch.randn(b, cfg.num_key_value_heads, p, cfg.head_dim, generator=g))
    ins, outs, axes = io_names(cfg)
    with torch.no_grad():
        torch.onnx.export(
            FlatPast(cfg, model),
            (ids, mask, pos, *past),
            path,
            input_names=ins,
            output_names=outs,
            dynamic_axes=axes,
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    # One file, weights inline: the fixture is small.
    onnx.save(m, path, save_as_external_data=False)


def padded_inputs(cfg):
    """Left-padded prefill inputs and one decode token per row."""
    g = torch.Generator().manual_seed(SEED + 2)
    T = max(PROMPT_LENS)
    B = len(PROMPT_LENS)
    ids = torch.full((B, T), PAD_ID, dtype=torch.int64)
    mask = torch.zeros(B, T, dtype=torch.int64)
    for r, n in enumerate(PROMPT_LENS):
        # Real tokens avoid PAD_ID so that padding is visibly different.
        ids[r, T - n :] = torch.randint(1, cfg.vocab_size, (n,), generator=g)
        mask[r, T - n :] = 1
    # HF's convention: count real tokens from 0; padded positions clipped to 0.
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    nxt = torch.randint(1, cfg.vocab_size, (B, 1), generator=g)
    next_mask = torch.cat([mask, torch.ones(B, 1, dtype=torch.int64)], dim=1)
    next_pos = pos[:, -1:] + 1
    return ids, mask, pos, nxt, next_mask, next_pos


def main():
    cfg, model = build_model()
    path = os.path.join(OUT, "model.onnx")
    export(cfg, model, path)
    cfg.save_pretrained(OUT)  # config.json

    ids, mask, pos, nxt, next_mask, next_pos = padded_inputs(cfg)
    B, T = ids.shape
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True)
        prefill = out.logits  # [B, T, V]
        step = model(input_ids=nxt, attention_mask=next_mask, position_ids=next_pos,
                     use_cache=True, **{cache_kwarg(model): out_cache(out)}).logits  # [B, 1, V]
        # Cross-check transformers against itself: the decode step equals the
        # last position of a full pass over T+1 tokens without a cache.
        full = model(input_ids=torch.cat([ids, nxt], 1), attention_mask=next_mask,
                     position_ids=torch.cat([pos, next_pos], 1), use_cache=False).logits
    real = mask.bool()
    d_self = (full[:, -1] - step[:, 0]).abs().max().item()
    d_self_prefix = (full[:, :T] - prefill)[real].abs().max().item()
    assert d_self < 1e-5 and d_self_prefix < 1e-5, (d_self, d_self_prefix)

    # Verify the export with onnxruntime: zero-length past on the prefill,
    # then one step on the presents it returned.
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    empty = np.zeros((B, cfg.num_key_value_heads, 0, cfg.head_dim), np.float32)
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "position_ids": pos.numpy()}
    for i in range(cfg.num_hidden_layers):
        feeds[f"past_key_values.{i}.key"] = empty
        feeds[f"past_key_values.{i}.value"] = empty
    res = sess.run(None, feeds)
    names = [o.name for o in sess.get_outputs()]
    o_prefill = res[0]
    d_prefill = np.abs(o_prefill - prefill.numpy())[real.numpy()].max()
    # Padded positions are not part of the contract (see the Go test); record
    # how far they agree anyway.
    d_padded = np.abs(o_prefill - prefill.numpy())[~real.numpy()].max()
    feeds = {"input_ids": nxt.numpy(), "attention_mask": next_mask.numpy(), "position_ids": next_pos.numpy()}
    for n, v in zip(names[1:], res[1:]):
        feeds[n.replace("present.", "past_key_values.")] = v
    o_step = sess.run(None, feeds)[0]
    d_step = np.abs(o_step - step.numpy()).max()
    print(f"onnxruntime vs transformers: prefill (real positions) {d_prefill:.3g}, "
          f"(padded positions) {d_padded:.3g}, step {d_step:.3g}")
    print(f"logits scale: std {prefill[real].std().item():.3g}, max abs {prefill[real].abs().max().item():.3g}")
    assert d_prefill < 1e-4 and d_step < 1e-4, (d_prefill, d_step)

    ref = {
        "about": "Reference logits from transformers Qwen3ForCausalLM (eager, fp32) for model.onnx; made by make_fixture.py.",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "onnxruntime": ort.__version__, "onnx": onnx.__version__, "python": sys.version.split()[0]},
        "seed": SEED,
        "opset": OPSET,
        "config": {k: CONFIG[k] for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                                          "num_attention_heads", "num_key_value_heads", "head_dim",
                                          "rms_norm_eps", "rope_theta", "tie_word_embeddings")},
        "position_ids_rule": "cumsum(attention_mask, -1) - 1, clipped at 0 (padded positions get 0); decode: last + 1",
        "batch": B,
        "seq": T,
        "vocab": cfg.vocab_size,
        "prompt_lens": PROMPT_LENS,
        "pad_id": PAD_ID,
        "input_ids": ids.tolist(),
        "attention_mask": mask.tolist(),
        "position_ids": pos.tolist(),
        "prefill_logits_shape": list(prefill.shape),
        "prefill_logits": prefill.flatten().tolist(),
        "next_input_ids": nxt.tolist(),
        "next_attention_mask": next_mask.tolist(),
        "next_position_ids": next_pos.tolist(),
        "step_logits_shape": list(step.shape),
        "step_logits": step.flatten().tolist(),
        "onnxruntime_check": {"prefill_max_abs_err": float(d_prefill), "prefill_padded_max_abs_err": float(d_padded),
                              "step_max_abs_err": float(d_step)},
    }
    with open(os.path.join(OUT, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in ("model.onnx", "config.json", "reference.json"))
    print(f"wrote {OUT}: {total} bytes")
    assert total < 1 << 20


if __name__ == "__main__":
    main()
