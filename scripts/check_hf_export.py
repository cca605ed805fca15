"""Check `spiral export --format hf` and `--format peft` with transformers
and peft themselves.

Loads the exported directory with transformers (AutoModelForCausalLM),
and compares its logits on a few token sequences with ONNX Runtime's on
the same weights exported as ONNX (`spiral export --format onnx`). With
ADAPTER_DIR (`spiral export --format peft` of a LoRA checkpoint), HF_DIR
is the base model (`spiral export --format hf` without --checkpoint) and
peft loads the adapter onto it (PeftModel.from_pretrained); MODEL.onnx is
then the merged export of the same checkpoint. An independent reference
for the product's exports, run by hand (it needs torch, transformers and
peft; CI checks names, shapes and layouts in Go, and LoRA and the peft
export against golden values of peft's in model/testdata/hfqwen3):

    python scripts/check_hf_export.py HF_DIR MODEL.onnx [ADAPTER_DIR]

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
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__)
    hf_dir, onnx_path = sys.argv[1:3]
    model = transformers.AutoModelForCausalLM.from_pretrained(hf_dir, torch_dtype=torch.float32)
    what = f"transformers {transformers.__version__}"
    if len(sys.argv) == 4:
        import peft

        model = peft.PeftModel.from_pretrained(model, sys.argv[3])
        what += f" + peft {peft.__version__}"
    model.eval()
    vocab = model.config.vocab_size
    rng = np.random.default_rng(0)
    ids = rng.integers(0, vocab, size=(3, 17), dtype=np.int64)
    with torch.no_grad():
        ref = model(torch.from_numpy(ids)).logits.numpy()
    got = onnx_logits(onnx_path, ids)
    diff = float(np.max(np.abs(ref - got)))
    scale = float(np.max(np.abs(ref)))
    print(f"{what}: logits {ref.shape}, max |diff| {diff:.3g} (largest logit {scale:.3g})")
    if diff > 1e-4 * max(scale, 1.0):
        print("FAIL: the export does not compute what the ONNX model computes")
        sys.exit(1)
    if len(sys.argv) == 4:
        with torch.no_grad(), model.disable_adapter():
            base = model(torch.from_numpy(ids)).logits.numpy()
        moved = float(np.max(np.abs(ref - base)))
        print(f"the adapter moves the base model's logits by up to {moved:.3g}")
        if moved <= diff:
            print("FAIL: the adapter does not change the logits by more than the difference measured")
            sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
