"""Print bench-scale's side-by-side table from the JSON lines in a results
directory (scripts/bench/scale.sh writes them): per training case, the last
step's tokens/s and the peak resident set of spiral and of PyTorch with
gradient checkpointing, their ratios, and `spiral plan`'s prediction with
its error against spiral's measured peak; then generation against its
bound (weights + KV cache + 1 GiB). Standard library only.

    python3 scripts/bench/table.py bench/results
"""
import json
import os
import sys

GIB = 1 << 30


def lines(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip().startswith("{")]


def summary(path):
    ls = lines(path)
    if not ls:
        return None
    steps = [l for l in ls if l["phase"] in ("step", "generate")]
    if not steps:
        return None
    return dict(tps=steps[-1].get("tokens_per_second", 0), peak=max(l["peak_rss_bytes"] for l in ls), last=steps[-1])


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "bench/results"
    print("| case | spiral tok/s | PyTorch tok/s | speed ratio | spiral peak | PyTorch peak | memory ratio | plan | plan error |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in ("8l-1x2048", "0.6b-1x2048", "0.6b-4x2048", "0.6b-1x9216"):
        s = summary(os.path.join(d, f"spiral-{name}.jsonl"))
        if s is None:
            continue
        t = summary(os.path.join(d, f"torch-{name}.jsonl"))
        with open(os.path.join(d, f"plan-{name}.json")) as f:
            plan = json.load(f)["train_total_bytes"]
        cells = [name, f"{s['tps']:.1f}"]
        if t:
            cells += [f"{t['tps']:.1f}", f"{s['tps'] / t['tps']:.2f}", f"{s['peak'] / GIB:.2f} GiB",
                      f"{t['peak'] / GIB:.2f} GiB", f"{s['peak'] / t['peak']:.2f}"]
        else:
            cells += ["-", "-", f"{s['peak'] / GIB:.2f} GiB", "-", "-"]
        cells += [f"{plan / GIB:.2f} GiB", f"{(plan - s['peak']) / s['peak'] * 100:+.1f}%"]
        print("| " + " | ".join(cells) + " |")
    g = summary(os.path.join(d, "spiral-gen-0.6b-64x1000.jsonl"))
    if g:
        last = g["last"]
        bound = last["weights_bytes"] + last["kv_cache_bytes"] + GIB
        with open(os.path.join(d, "plan-gen-0.6b-64x1000.json")) as f:
            plan = json.load(f)["generate_total_bytes"]
        print()
        print("| generation | decode tok/s | prefill tok/s | peak | weights + KV cache + 1 GiB | plan | plan error |")
        print("|---|---|---|---|---|---|---|")
        print(f"| 0.6b 64 rows x 1000 + 16 | {last['tokens_per_second']:.1f} | {last['prompt_tokens_per_second']:.1f} | "
              f"{g['peak'] / GIB:.2f} GiB | {bound / GIB:.2f} GiB | {plan / GIB:.2f} GiB | "
              f"{(plan - g['peak']) / g['peak'] * 100:+.1f}% |")


if __name__ == "__main__":
    main()
