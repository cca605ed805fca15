"""The reference side of `spiral bench train`: the same training step in PyTorch.

transformers' Qwen3 (the checkpoint make_model.py wrote beside the ONNX
export, OUT/torch), float32, on the same synthetic rows: random token ids,
the second half of each row the response; the same loss (REINFORCE with
advantage 1, i.e. the token-mean negative log-likelihood of the response,
from full-sequence logits, with the entropy computed for the metrics); then
torch.optim.AdamW. One JSON line per step, with the fields of spiral bench
train: seconds, tokens_per_second (rows x tokens over forward + backward),
forward_seconds, loss_seconds (0: the loss is part of the forward here),
backward_seconds, optimizer_seconds, rss_bytes and peak_rss_bytes (VmRSS
and VmHWM of the process).

    python scripts/bench/torch_train_step.py --model bench/qwen3-0.6b --rows 1 --tokens 2048 \
        --threads 2 --checkpointing
"""
import argparse
import json
import os
import time

import torch
from transformers import Qwen3ForCausalLM


def memory():
    rss = peak = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith("VmHWM:"):
                peak = int(line.split()[1]) * 1024
    return rss, peak


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="directory make_model.py wrote (reads MODEL/torch)")
    ap.add_argument("--rows", type=int, default=1)
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--checkpointing", action="store_true", help="gradient checkpointing (recompute each layer in backward)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    model = Qwen3ForCausalLM.from_pretrained(os.path.join(args.model, "torch"), torch_dtype=torch.float32,
                                             attn_implementation="eager")
    model.train()
    model.config.use_cache = False
    if args.checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    rss, peak = memory()
    print(json.dumps(dict(phase="open", rows=args.rows, tokens=args.tokens, seconds=time.perf_counter() - start,
                          rss_bytes=rss, peak_rss_bytes=peak, weights_bytes=weights)), flush=True)
    g = torch.Generator().manual_seed(args.seed)
    R, T = args.rows, args.tokens
    ids = torch.randint(0, model.config.vocab_size, (R, T), generator=g)
    mask = torch.zeros(R, T)
    mask[:, T // 2 - 1:T - 1] = 1  # positions whose next token is in the response
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        logits = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
        lp = torch.log_softmax(logits, dim=-1)
        tok = lp[:, :-1].gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
        tok = torch.cat([tok, torch.zeros(R, 1)], dim=1)
        with torch.no_grad():
            entropy = -(lp.exp() * lp).sum(-1)
        loss = -(tok * mask).sum() / mask.sum()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        del logits, lp, tok, entropy, loss
        rss, peak = memory()
        print(json.dumps(dict(phase="step", step=step, rows=R, tokens=T, seconds=t3 - t0,
                              tokens_per_second=R * T / (t2 - t0), forward_seconds=t1 - t0, loss_seconds=0.0,
                              backward_seconds=t2 - t1, optimizer_seconds=t3 - t2, rss_bytes=rss, peak_rss_bytes=peak,
                              weights_bytes=weights)), flush=True)


if __name__ == "__main__":
    main()
