# Run by hand (not in CI), from the repository root, with the packages of
# make_fixture.py and peft:
#     pip install torch==2.15.0 transformers==5.25.0 peft==0.21.2 safetensors numpy  # Python 3.11
#     python3 model/testdata/hfqwen3/make_peft_reference.py
# It rewrites peft/ (adapter_model.safetensors, adapter_config.json) and
# peft_reference.json in this folder; model/peftreference_test.go checks
# spiral's LoRA against them.
#
# What it makes: a LoRA adapter of the fixture's model (make_fixture.py's
# build_model, checked against its reference.json) written by peft itself
# (save_pretrained): rank 3, alpha 5 (scale 5/3, not 1, so that a scale
# taken as alpha, 1/rank or rsLoRA's alpha/sqrt(rank) shows), every
# projection, lora_A and lora_B drawn at random (B not zero, so that the
# adapter moves the logits), and the logits of the adapted model
# (PeftModel, eager attention, fp32) on the fixture's padded batch. The Go
# test runs spiral's LoRA graphs with those factors and compares the
# logits, and checks that spiral's peft export of them is peft's file.
# A rerun writes the same files, but for the order of adapter_config.json's
# target_modules (peft keeps them in a Python set).
import json
import os
import sys

import numpy as np
import peft
import torch
import transformers

OUT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, OUT)
import make_fixture  # noqa: E402

RANK, ALPHA = 3, 5
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
SEED = 7


def main():
    ref = json.load(open(os.path.join(OUT, "reference.json")))
    _, model = make_fixture.build_model()
    ids = torch.tensor(ref["input_ids"])
    mask = torch.tensor(ref["attention_mask"])
    pos = torch.tensor(ref["position_ids"])
    real = mask.numpy().astype(bool)
    with torch.no_grad():
        base = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits.numpy()
    want = np.array(ref["prefill_logits"], dtype=np.float32).reshape(ref["prefill_logits_shape"])
    diff = float(np.abs(base - want)[real].max())
    assert diff < 1e-5, f"build_model does not reproduce reference.json: max |diff| {diff}"

    cfg = peft.LoraConfig(r=RANK, lora_alpha=ALPHA, target_modules=TARGETS, lora_dropout=0.0, bias="none", task_type="CAUSAL_LM")
    model = peft.get_peft_model(model, cfg)
    rng = np.random.default_rng(SEED)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if ".lora_A." in name or ".lora_B." in name:
                p.copy_(torch.from_numpy(rng.normal(0, 0.3, size=tuple(p.shape)).astype(np.float32)))
    model.eval()
    with torch.no_grad():
        adapted = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits.numpy()
    moved = float(np.abs(adapted - base)[real].max())
    model.save_pretrained(os.path.join(OUT, "peft"))
    os.remove(os.path.join(OUT, "peft", "README.md"))  # peft's model card template
    out = {
        "about": "logits of the fixture's model with the adapter in peft/ (make_peft_reference.py), on reference.json's padded batch",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__},
        "rank": RANK,
        "alpha": ALPHA,
        "targets": TARGETS,
        "moved": moved,
        "logits_shape": list(adapted.shape),
        "logits": [float(v) for v in adapted.reshape(-1)],
    }
    with open(os.path.join(OUT, "peft_reference.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote peft/ and peft_reference.json: the adapter moves the logits by up to {moved:.3g}")


if __name__ == "__main__":
    main()
