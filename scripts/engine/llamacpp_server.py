"""Serve a spiral Hugging Face export with llama.cpp's server (a reference
engine for the tests, never the product).

    llamacpp_server.py --hf DIR --gguf OUT.gguf [--name NAME] [--threads N]

Converts DIR (`spiral export --format hf` of a Qwen3 model: config.json,
model.safetensors, tokenizer.json) to OUT.gguf in float32 with llama.cpp's
gguf writer, starts llama.cpp's OpenAI-compatible server (xllamacpp) on a
free loopback port, prints "listening http://127.0.0.1:PORT" and serves
until killed or until its standard input closes.

The tokenizer goes in as llama.cpp's byte-level BPE ("gpt2"): tokens are
written in the byte-to-unicode alphabet, merges kept (none for a
word-level vocabulary such as the embedded model's, which gets one merge
that never applies, since llama.cpp refuses a BPE without merges).
Requests send token ids, so the tokenizer only decodes.
"""

import argparse
import json
import struct
import sys

import gguf
import numpy as np

LAYER_TENSORS = {
    "input_layernorm": "attn_norm",
    "post_attention_layernorm": "ffn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
TOP_TENSORS = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}


def read_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, h in header.items():
        if h["dtype"] != "F32":
            sys.exit(f"{path}: tensor {name} is {h['dtype']}: want F32")
        a, b = h["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a : 8 + n + b], dtype=np.float32).reshape(h["shape"])
    return out


def gguf_name(name):
    if name in TOP_TENSORS:
        return TOP_TENSORS[name]
    parts = name.split(".")  # model.layers.N.<module path>.weight
    if len(parts) < 5 or parts[:2] != ["model", "layers"] or parts[-1] != "weight":
        sys.exit(f"tensor {name}: not a Qwen3 parameter name")
    module = ".".join(parts[3:-1])
    if module not in LAYER_TENSORS:
        sys.exit(f"tensor {name}: no llama.cpp name for module {module}")
    return f"blk.{parts[2]}.{LAYER_TENSORS[module]}.weight"


def byte_alphabet():
    """GPT-2's byte-to-unicode map, as llama.cpp's BPE decoder inverts it."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    codes, extra = keep[:], 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            codes.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(keep, codes)}


def add_tokenizer(w, tok, vocab_size):
    model = tok["model"]
    vocab = dict(model["vocab"])
    special = {a["content"] for a in tok.get("added_tokens", []) if a.get("special")}
    for a in tok.get("added_tokens", []):
        vocab[a["content"]] = a["id"]
    byte_level = model["type"] == "BPE"  # already in the byte alphabet
    alphabet = byte_alphabet()
    tokens = [f"[PAD{i}]" for i in range(vocab_size)]
    types = [gguf.TokenType.UNUSED] * vocab_size
    for text, i in vocab.items():
        if i >= vocab_size:
            sys.exit(f"token {text!r} has id {i}: beyond the model's vocabulary of {vocab_size}")
        if text in special or text == model.get("unk_token"):
            tokens[i], types[i] = text, gguf.TokenType.CONTROL
        else:
            tokens[i] = text if byte_level else "".join(alphabet[b] for b in text.encode())
            types[i] = gguf.TokenType.NORMAL
    merges = model.get("merges") or []
    merges = [m if isinstance(m, str) else " ".join(m) for m in merges]
    if not merges:
        merges = ["\\\\ \\\\"]  # never applies: the vocabulary has no "\\\\" token to merge into
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    return vocab


def convert(hf, out):
    cfg = json.load(open(f"{hf}/config.json"))
    tok = json.load(open(f"{hf}/tokenizer.json"))
    w = gguf.GGUFWriter(out, "qwen3")
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_freq_base(cfg["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    vocab = add_tokenizer(w, tok, cfg["vocab_size"])
    for name in ("<|im_end|>", "<|endoftext|>"):
        if name in vocab:
            w.add_eos_token_id(vocab[name])
            break
    w.add_add_bos_token(False)
    for name, t in read_safetensors(f"{hf}/model.safetensors").items():
        w.add_tensor(gguf_name(name), np.ascontiguousarray(t))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hf", required=True, help="spiral export --format hf directory")
    ap.add_argument("--gguf", required=True, help="the GGUF file to write")
    ap.add_argument("--name", default="embedded", help="the served model name")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--parallel", type=int, default=4, help="request slots")
    args = ap.parse_args()
    convert(args.hf, args.gguf)

    import xllamacpp

    p = xllamacpp.CommonParams()
    p.model.path = args.gguf
    p.model_alias = {args.name}
    p.hostnames = ["127.0.0.1"]
    p.port = 0  # a free port; the address is printed
    p.n_parallel = args.parallel
    p.n_ctx = 4096 * args.parallel
    # The KV cache in float32 (llama.cpp's default is float16) and no flash
    # attention (which rounds through float16 on the CPU), so that the
    # greedy comparison with spiral meets float32 rounding only: with
    # either left on, one aggregation of the embedded model's 32 took a
    # token whose logit was 0.0012 below spiral's choice.
    p.cache_type_k = xllamacpp.ggml_type.GGML_TYPE_F32
    p.cache_type_v = xllamacpp.ggml_type.GGML_TYPE_F32
    p.flash_attn_type = xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    server = xllamacpp.Server(p)
    print("listening", server.listening_address, flush=True)
    sys.stdin.read()  # serve until the parent closes our stdin (or kills us)


if __name__ == "__main__":
    main()
