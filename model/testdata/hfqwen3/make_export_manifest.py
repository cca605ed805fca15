"""Write export_manifest.json: what transformers and peft save for the HF
fixture's config, the manifest the Go export tests check spiral's
`export --format hf` and `--format peft` against (names, shapes, dtypes).

transformers' save_pretrained leaves a tied LM head out; peft's
save_pretrained writes get_peft_model_state_dict of a LoraConfig with the
rank, alpha and targets below. Run once, by hand, from this directory
(needs torch, transformers, peft):

    python make_export_manifest.py
"""
import json
import os

import peft
import torch
import transformers

LORA = {"rank": 3, "alpha": 6.0, "targets": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}


def entries(state):
    return {name: {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")} for name, t in sorted(state.items())}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    config = transformers.AutoConfig.from_pretrained(here)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    state = model.state_dict()
    if config.tie_word_embeddings:
        state.pop("lm_head.weight")
    lora = peft.LoraConfig(r=LORA["rank"], lora_alpha=LORA["alpha"], target_modules=LORA["targets"], lora_dropout=0.0, bias="none",
                           task_type="CAUSAL_LM")
    adapted = peft.get_peft_model(model, lora)
    out = {
        "generated_by": f"make_export_manifest.py (transformers {transformers.__version__}, peft {peft.__version__})",
        "lora": LORA,
        "hf": entries(state),
        "peft": entries(peft.get_peft_model_state_dict(adapted)),
    }
    with open(os.path.join(here, "export_manifest.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
