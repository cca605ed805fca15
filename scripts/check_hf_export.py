"""Check `spiral export --format hf` with transformers itself.

Loads the exported directory with transformers (AutoModelForCausalLM,
AutoTokenizer where one is present), and compares its logits on a few
token sequences with ONNX Runtime's on the same weights exported as ONNX
(`spiral export --format onnx`). An independent reference for the
product's export, run by hand (it needs torch and transformers; CI checks
names, shapes and layouts in Go):

    python scripts/check_hf_export.py HF_DIR MODEL.onnx

Exits 1 when the largest logit difference exceeds 1e-4 of the largest
logit.
"""
import sys

import numpy as np
import onnxruntime as ort
import torch
import transformers


def onnx_logits(path, ids):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rows, seq = ids.shape
    feed = {}
    for inp in sess.get_inputs():
        if inp.name == "input_ids":
            feed[inp.name] = ids
        elif inp.name == "attention_mask":
            feed[inp.name] = np.ones((rows, seq), dtype=np.int64)
        elif inp.name == "position_ids":
            feed[inp.name] = np.tile(np.arange(seq, dtype=np.int64), (rows, 1))
        elif inp.name.startswith("past_key_values."):
            heads, dim = inp.shape[1], inp.shape[3]
            feed[inp.name] = np.zeros((rows, heads, 0, dim), dtype=np.float32)
        else:
            raise SystemExit(f"{path}: unexpected input {inp.name}")
    return sess.run(["logits"], feed)[0]


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    hf_dir, onnx_path = sys.argv[1:]
    model = transformers.AutoModelForCausalLM.from_pretrained(hf_dir, torch_dtype=torch.float32)
    model.eval()
    vocab = model.config.vocab_size
    rng = np.random.default_rng(0)
    ids = rng.integers(0, vocab, size=(3, 17), dtype=np.int64)
    with torch.no_grad():
        ref = model(torch.from_numpy(ids)).logits.numpy()
    got = onnx_logits(onnx_path, ids)
    diff = float(np.max(np.abs(ref - got)))
    scale = float(np.max(np.abs(ref)))
    print(f"transformers {transformers.__version__}: logits {ref.shape}, max |diff| {diff:.3g} (largest logit {scale:.3g})")
    if diff > 1e-4 * max(scale, 1.0):
        print("FAIL: the HF export does not compute what the ONNX model computes")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
