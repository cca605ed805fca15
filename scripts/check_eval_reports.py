#!/usr/bin/env python3
"""Recompute `spiral eval` reports and `spiral compare` tables independently.

A reference for maintainers, not run by CI. It reads eval reports
(passk.json, rsa.json, sequential.json) with the traces `--traces` wrote
beside them (MODE.traces.jsonl) and recomputes, with its own code from the
definitions in README ("spiral eval", "spiral compare") and ARCHITECTURE.md
("Inference scaffolds"), not from spiral's Go code:

- passk: each problem's correct count from its traces against `per_problem`;
  pass@k by the unbiased estimator 1 - C(n-c, k)/C(n, k); majority@k by
  enumerating every k-subset where the report says it is exact
  (`majority_exact`), else by its own Monte Carlo estimate, compared within
  5 standard errors of the two estimates; generated tokens.
- rsa: each step's accuracy (mean over problems of the fraction of correct
  members), majority (population vote), generated tokens, the cumulative
  sums, and each aggregation's candidates (K distinct members of the step
  before).
- sequential: each budget's accuracy, mean tokens and truncated fraction,
  grading a trace cut at the budget on its text's prefix: right only where
  the prefix states an explicit answer (\boxed{} or "final answer is")
  that the next token leaves as it is. This needs a character-level
  tokenizer (the embedded model's), where b tokens are b characters; a
  trace whose token count is not its characters' is reported.
- answers: each trace's answer and grade against this script's reading of
  explicit answers (the last \boxed{...} or one-token "\boxed 5", else a
  closing "final answer is X"). Under --reward-fallback or --reward-truncated (the
  report's reward_rule) the grader's fallback reading decides, which this
  script does not reimplement: it checks a trace's grade against its
  recorded answer only, and no accuracy that grades a cut trace.
- prompt tokens, with --problems (the JSONL `spiral data synth --problems N`
  writes for an embedded evaluation of --limit N): the ChatML prompt
  around the embedded templates, counted in characters and special tokens.
- compare: with --compare, run as `spiral compare`'s arguments in order, it
  runs `spiral compare` (--spiral, default ./spiral) and checks its tables:
  pass@k scaling efficiency (log-k interpolation, bounds, maximum; on a
  plateau of the reference's curve the ratio is over the plateau's first
  k), RSA gains per step and gains at equal tokens (past the other curve's
  largest mean tokens, its last accuracy where none of its traces was cut
  there, else "-"), recomputed from the reports' figures averaged over
  each label's seeds, to the printed digits (half a unit of the last digit
  printed). Bootstrap intervals are not checked: they depend on spiral's
  random draws.

Majority voting follows ARCHITECTURE.md ("Inference scaffolds"): answers are clustered with the
grader's equivalence (here: equal as numbers where both parse, as strings
otherwise, which the embedded task's integer answers need), greedily in
sample order; empty answers never vote; ties go to the cluster seen first
in the subset; an all-empty vote is wrong.

Run with a Python that has numpy (make engine-venv's
~/.cache/spiral/engine-venv/bin/python has it):
  python3 scripts/check_eval_reports.py [--problems P.jsonl] REPORT.json ...
  python3 scripts/check_eval_reports.py --compare [--max-k 64] REF.json OTHER.json ...
It prints how many figures it compared, the largest difference of those
compared to 1e-9 (the exact ones) and each mismatch, and exits 1 on one.
On the embedded model (eval --traces --threads 1: passk --limit 24
--samples 16 and 64, rsa --limit 16 --rsa-steps 3 and --limit 128
--rsa-steps 10, sequential --limit 16 and 128, passk --limit 128 --samples
256, and compare of two labels, one of two seeds) every figure matched,
the exact ones to 2.2e-16.
"""

import argparse
import itertools
import json
import math
import os
import re
import subprocess
import sys
from collections import defaultdict
from fractions import Fraction

import numpy as np

EXACT = 1e-9  # figures computed from integers: only float rounding differs
MC_DRAWS = 4000  # this script's Monte Carlo subsets a problem, where a report's majority@k is one too


class Checker:
    def __init__(self):
        self.count = 0
        self.maxdiff = 0.0
        self.failures = []

    def eq(self, what, got, want, tol=EXACT):
        self.count += 1
        d = abs(got - want)
        if tol == EXACT:
            self.maxdiff = max(self.maxdiff, d)
        if not d <= tol:
            self.failures.append(f"{what}: report {got!r}, recomputed {want!r} (|diff| {d:.3g} > {tol:.3g})")

    def fail(self, what):
        self.failures.append(what)


# ---- answers -----------------------------------------------------------

BOXED = "\\boxed"
SPACED = re.compile(r"\s+([0-9A-Za-z.]+)")  # the one-token form "\boxed 5"
FINAL = re.compile(r"final answer is[:\s]*\$?([^\s$]+?)\$?[.\s]*$", re.IGNORECASE)


def boxed(text):
    """The last complete \\boxed{...} (braces balanced) or "\\boxed 5" in text, or None."""
    out = None
    i = text.find(BOXED)
    while i >= 0:
        j = i + len(BOXED)
        if text.startswith("{", j):
            depth, j = 1, j + 1
            while j < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            if depth == 0:
                out = text[i + len(BOXED) + 1 : j - 1].strip()
        elif m := SPACED.match(text, j):
            out = m.group(1)
        i = text.find(BOXED, i + 1)
    return out


def explicit_answer(text):
    b = boxed(text)
    if b is not None:
        return b
    m = FINAL.search(text)
    return m.group(1) if m else None


def explicit_only(rep):
    """Whether the report's reward rule (meta.extra.reward_rule) is the
    default, explicit answers only. With --reward-fallback or
    --reward-truncated the grader's fallback reading (the last number or
    LaTeX span, with its exceptions) decides, which this script does not
    reimplement: it then checks a trace's grade against its recorded answer
    only, and no accuracy that grades a trace cut at a budget."""
    return rep["meta"].get("extra", {}).get("reward_rule", "").startswith("explicit answers only")


def number(s):
    try:
        return Fraction(s.replace(" ", ""))
    except (ValueError, ZeroDivisionError):
        return None


def same(a, b):
    x, y = number(a), number(b)
    if x is not None and y is not None:
        return x == y
    return a.strip() == b.strip()


# ---- reading -----------------------------------------------------------


def traces_of(report_path, mode):
    path = os.path.join(os.path.dirname(report_path), mode + ".traces.jsonl")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return [json.loads(line) for line in f]


def by_problem(traces, step=0):
    out = defaultdict(list)
    for t in traces:
        if t["step"] == step:
            out[t["problem"]].append(t)
    return [sorted(out[p], key=lambda t: t["sample"]) for p in sorted(out)]


def check_trace_grades(c, name, traces, explicit):
    """The traces' answers and grades against this script's extraction."""
    for t in traces:
        ans = explicit_answer(t["text"]) if explicit else (t.get("answer") or None)
        if (ans or "") != (t.get("answer") or "") and not (ans and t.get("answer") and same(ans, t["answer"])):
            c.fail(f"{name}: problem {t['problem']} sample {t['sample']} step {t['step']}: answer {t.get('answer')!r}, extracted {ans!r}")
            continue
        want = ans is not None and same(ans, t["gold"])
        if want != t["correct"]:
            c.fail(f"{name}: problem {t['problem']} sample {t['sample']} step {t['step']}: correct {t['correct']}, recomputed {want}")


def clusters(answers):
    """Cluster ids in first-seen order; -1 for an empty answer."""
    reps, ids = [], []
    for a in answers:
        if not a:
            ids.append(-1)
            continue
        for i, r in enumerate(reps):
            if same(r, a):
                ids.append(i)
                break
        else:
            reps.append(a)
            ids.append(len(reps) - 1)
    return ids, reps


def vote(ids, members):
    """The winning cluster of members (increasing sample indices), or -1."""
    counts, first = {}, {}
    for pos, m in enumerate(members):
        cl = ids[m]
        if cl < 0:
            continue
        counts[cl] = counts.get(cl, 0) + 1
        first.setdefault(cl, pos)
    if not counts:
        return -1
    return min(counts, key=lambda cl: (-counts[cl], first[cl]))


def majority_exact(ids, right, k):
    n = len(ids)
    hits = sum(1 for s in itertools.combinations(range(n), k) if (w := vote(ids, s)) >= 0 and right[w])
    return Fraction(hits, math.comb(n, k))


def majority_mc(ids, right, k, draws, rng):
    """Monte Carlo majority@k over draws uniform k-subsets (vectorised)."""
    n = len(ids)
    subs = np.sort(np.argsort(rng.random((draws, n)), axis=1)[:, :k], axis=1)
    lab = np.asarray(ids)[subs]  # draws x k, in sample order
    ncl = max(ids) + 1
    if ncl == 0:
        return 0.0
    onehot = lab[:, :, None] == np.arange(ncl)[None, None, :]
    counts = onehot.sum(axis=1)
    pos = np.where(onehot, np.arange(k)[None, :, None], k).min(axis=1)
    best = counts.max(axis=1, keepdims=True)
    key = np.where(counts == best, pos, k + 1)
    win = key.argmin(axis=1)
    ok = (best[:, 0] > 0) & np.asarray(right)[win]
    return ok.mean()


def pass_at_k(n, c, k):
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


# ---- the modes ---------------------------------------------------------

IM_START, IM_END = 1, 1  # one token each


def chat_tokens(text):
    # <|im_start|>user\n TEXT <|im_end|>\n<|im_start|>assistant\n
    return IM_START + len("user\n") + len(text) + IM_END + len("\n") + IM_START + len("assistant\n")


def check_passk(c, path, rep, problems):
    name = os.path.basename(os.path.dirname(path)) + "/passk.json"
    n = rep["config"]["samples"]
    per = rep["per_problem"]
    counts = [p["correct"] for p in per]
    tr = traces_of(path, "passk")
    if tr is not None:
        check_trace_grades(c, name, tr, explicit_only(rep))
        probs = by_problem(tr)
        if len(probs) != len(per):
            c.fail(f"{name}: {len(probs)} problems in traces, {len(per)} in per_problem")
        for i, ts in enumerate(probs):
            if [t["sample"] for t in ts] != list(range(n)):
                c.fail(f"{name}: problem {i}: samples {[t['sample'] for t in ts][:5]}..., want 0..{n - 1}")
            c.eq(f"{name} per_problem[{i}].correct", per[i]["correct"], sum(t["correct"] for t in ts))
            if ts[0]["id"] != per[i]["id"]:
                c.fail(f"{name}: problem {i}: id {per[i]['id']} in per_problem, {ts[0]['id']} in traces")
        c.eq(f"{name} tokens.generated", rep["tokens"]["generated"], sum(t["tokens"] for t in tr))
    if problems is not None:
        c.eq(f"{name} tokens.prompt", rep["tokens"]["prompt"], n * sum(chat_tokens(problems[i]) for i in range(len(per))))
    maxex = rep["config"]["majority"]["max_exact"]
    draws = rep["config"]["majority"]["samples"]
    rng = np.random.default_rng(12345)
    for pt in rep["points"]:
        k = pt["k"]
        want = sum(pass_at_k(n, ci, k) for ci in counts) / len(counts)
        c.eq(f"{name} pass@{k}", pt["pass_at_k"], float(want))
        if tr is None:
            continue
        exact = math.comb(n, k) <= maxex
        if pt["majority_exact"] != exact:
            c.fail(f"{name} k={k}: majority_exact {pt['majority_exact']}, C({n},{k}) <= {maxex} is {exact}")
        fr, var = [], 0.0
        for ts in probs:
            ids, _ = clusters([t.get("answer") or "" for t in ts])
            right = [False] * (max(ids) + 1)
            for t, cl in zip(ts, ids):
                if cl >= 0 and not right[cl]:
                    right[cl] = t["correct"]  # the representative's grade is the first member's
            if exact:
                fr.append(majority_exact(ids, right, k))
            else:
                p = majority_mc(ids, right, k, MC_DRAWS, rng)
                fr.append(p)
                var += p * (1 - p) * (1 / draws + 1 / MC_DRAWS)
        want = sum(fr) / len(fr)
        if exact:
            c.eq(f"{name} majority@{k} (exact)", pt["majority_at_k"], float(want))
        else:
            se = math.sqrt(var) / len(fr)
            c.eq(f"{name} majority@{k} (Monte Carlo, 5 s.e.)", pt["majority_at_k"], float(want), tol=max(5 * se, 1e-12))


def check_rsa(c, path, rep, problems):
    name = os.path.basename(os.path.dirname(path)) + "/rsa.json"
    cfg = rep["config"]
    tr = traces_of(path, "rsa")
    if tr is None:
        return
    check_trace_grades(c, name, tr, explicit_only(rep))
    cum = [0, 0]
    for st in rep["steps"]:
        s = st["step"]
        probs = by_problem(tr, s)
        if len(probs) != rep["meta"]["problems"]:
            c.fail(f"{name} step {s}: {len(probs)} problems in traces")
        acc = sum(Fraction(sum(t["correct"] for t in ts), len(ts)) for ts in probs) / len(probs)
        c.eq(f"{name} step {s} accuracy", st["accuracy"], float(acc))
        maj = 0
        for ts in probs:
            ids, _ = clusters([t.get("answer") or "" for t in ts])
            w = vote(ids, range(len(ts)))
            maj += w >= 0 and ts[ids.index(w)]["correct"]
        c.eq(f"{name} step {s} majority", st["majority"], maj / len(probs))
        gen = sum(t["tokens"] for ts in probs for t in ts)
        c.eq(f"{name} step {s} tokens.generated", st["tokens"]["generated"], gen)
        prompt = None
        if problems is not None:
            prev = by_problem(tr, s - 1) if s > 0 else None
            prompt = 0
            for i, ts in enumerate(probs):
                for t in ts:
                    if s == 0:
                        prompt += chat_tokens(problems[i])
                        continue
                    cand = t["candidates"]
                    if len(set(cand)) != cfg["subset_size"] or not all(0 <= x < cfg["population"] for x in cand):
                        c.fail(f"{name} step {s} problem {i} sample {t['sample']}: candidates {cand}")
                    if "candidate_tokens" in cfg or st.get("fitted_prompts"):
                        prompt = None  # cut candidates: not recomputed
                        break
                    body = problems[i] + "".join(f"\n#{j + 1} {prev[i][x]['text']}" for j, x in enumerate(cand)) + "\nCheck them and solve:"
                    prompt += chat_tokens(body)
                if prompt is None:
                    break
            if prompt is not None:
                c.eq(f"{name} step {s} tokens.prompt", st["tokens"]["prompt"], prompt)
        cum[0] += st["tokens"]["prompt"]
        cum[1] += st["tokens"]["generated"]
        c.eq(f"{name} step {s} cumulative.prompt", st["cumulative"]["prompt"], cum[0])
        c.eq(f"{name} step {s} cumulative.generated", st["cumulative"]["generated"], cum[1])


def check_sequential(c, path, rep, problems):
    name = os.path.basename(os.path.dirname(path)) + "/sequential.json"
    tr = traces_of(path, "sequential")
    if tr is None:
        return
    explicit = explicit_only(rep)
    check_trace_grades(c, name, tr, explicit)
    probs = by_problem(tr)
    for t in tr:  # character-level: the text is one token a character, the stop token besides
        want = len(t["text"]) + (t["finish"] == "stop")
        if t["tokens"] != want:
            c.fail(f"{name}: problem {t['problem']} sample {t['sample']}: {t['tokens']} tokens, {want} characters: not a character-level tokenizer; budgets not checked")
            return
    c.eq(f"{name} tokens.generated", rep["tokens"]["generated"], sum(t["tokens"] for t in tr))
    if problems is not None:
        c.eq(f"{name} tokens.prompt", rep["tokens"]["prompt"], rep["config"]["samples"] * sum(chat_tokens(problems[i]) for i in range(len(probs))))
    for pt in rep["points"]:
        b = pt["budget"]
        acc, used, cut, total, graded = Fraction(0), 0, 0, 0, True
        for ts in probs:
            hits = 0
            for t in ts:
                if t["tokens"] <= b:
                    ok = t["correct"]
                    used += t["tokens"]
                    cut += t["finish"] == "length"
                else:
                    # cut at b tokens: graded as a cut trace, right only if
                    # its prefix states an explicit answer that the next
                    # token leaves as it is
                    a = explicit_answer(t["text"][:b])
                    ok = a is not None and a == explicit_answer(t["text"][: b + 1]) and same(a, t["gold"])
                    graded = explicit
                    used += b
                    cut += 1
                hits += ok
                total += 1
            acc += Fraction(hits, len(ts))
        if graded:
            c.eq(f"{name} budget {b} accuracy", pt["accuracy"], float(acc / len(probs)))
        c.eq(f"{name} budget {b} mean_tokens", pt["mean_tokens"], used / total)
        c.eq(f"{name} budget {b} truncated", pt["truncated"], cut / total)


# ---- compare -----------------------------------------------------------


def reach(ks, ps, target):
    """Samples a curve piecewise linear in log k needs for target, and its bound."""
    if ps[0] >= target:
        return ks[0], ("at most" if ps[0] > target else "")
    for i in range(1, len(ks)):
        if ps[i] >= target:
            f = (target - ps[i - 1]) / (ps[i] - ps[i - 1])
            return math.exp(math.log(ks[i - 1]) + f * (math.log(ks[i]) - math.log(ks[i - 1]))), ""
    return ks[-1], "at least"


def interp_log(xs, ys, x):
    for i in range(1, len(xs)):
        if x <= xs[i]:
            if xs[i] == xs[i - 1]:
                return ys[i]
            f = (math.log(x) - math.log(xs[i - 1])) / (math.log(xs[i]) - math.log(xs[i - 1]))
            return ys[i - 1] + f * (ys[i] - ys[i - 1])
    return None


def mean(xs):
    return sum(xs) / len(xs)


def check_compare(c, paths, max_k, spiral):
    out = subprocess.run([spiral, "compare"] + (["--max-k", str(max_k)] if max_k else []) + paths, capture_output=True, text=True)
    if out.returncode:
        c.fail(f"spiral compare exit {out.returncode}: {out.stderr.strip()}")
        return
    text = out.stdout
    groups = defaultdict(lambda: defaultdict(list))  # mode -> label -> reports
    for p in paths:
        rep = json.load(open(p))
        m = rep["meta"]
        groups[m["mode"]][m.get("label") or m["model"]].append(rep)
    half = lambda digits: 0.5 * 10**-digits + 1e-12  # noqa: E731

    if "passk" in groups:
        labels = list(groups["passk"])
        curves = {}
        for lab, reps in groups["passk"].items():
            ks = [pt["k"] for pt in reps[0]["points"]]
            curves[lab] = (ks, [mean([r["points"][i]["pass_at_k"] for r in reps]) for i in range(len(ks))])
        rk, rp = curves[labels[0]]
        for lab in labels[1:]:
            ok, op = curves[lab]
            m = re.search(rf"pass@k: samples {re.escape(lab)} needs to reach .*?\n(.*?)\n  scaling efficiency[^\n]*", text, re.S)
            if not m:
                c.fail(f"compare: no pass@k table for {lab}")
                continue
            rows = [r.split() for r in m.group(1).splitlines()[1:]]
            best = None
            for i, k in enumerate(rk):
                if max_k and k > max_k:
                    continue
                other, bound = reach(ok, op, rp[i])
                base = rk[min(j for j in range(i + 1) if rp[j] >= rp[i] - 1e-12)]  # a plateau's first k
                ratio = other / base
                row = next((r for r in rows if r[0] == str(k)), None)
                if row is None:
                    c.fail(f"compare {lab}: no row for k = {k}")
                    continue
                c.eq(f"compare {lab} k={k} target", float(row[1]), rp[i], tol=half(4))
                c.eq(f"compare {lab} k={k} other k", float(row[2]), other, tol=half(2))
                got = float(re.sub(r"[^0-9.]", "", row[-4] if "at" in row else row[3]))
                c.eq(f"compare {lab} k={k} ratio", got, ratio, tol=half(2))
                printed = " ".join(row)
                if bound and bound not in printed:
                    c.fail(f"compare {lab} k={k}: want {bound!r} in {printed!r}")
                if not bound and ("at most" in printed or "at least" in printed):
                    c.fail(f"compare {lab} k={k}: exact ratio printed as a bound: {printed!r}")
                if not bound and (best is None or ratio > best[0]):
                    best = (ratio, k)
            up = re.search(r"up to (\d+\.\d+)x \(k = (\d+)", m.group(0))
            if best and up:
                c.eq(f"compare {lab} up to", float(up.group(1)), best[0], tol=half(2))
                c.eq(f"compare {lab} up to k", int(up.group(2)), best[1])
            elif best or up:
                c.fail(f"compare {lab}: maximum {best}, printed {m.group(0).splitlines()[-1]!r}")

    if "rsa" in groups:
        labels = list(groups["rsa"])
        acc = {lab: [mean([r["steps"][j]["accuracy"] for r in reps]) for j in range(len(reps[0]["steps"]))] for lab, reps in groups["rsa"].items()}
        ref = acc[labels[0]]
        for lab in labels:
            m = re.search(rf"^  {re.escape(lab)} \(n = \d+\): (.*)$", text, re.M)
            if not m:
                c.fail(f"compare: no RSA line for {lab}")
                continue
            for cell in re.finditer(r"(\d+): (\d\.\d+) \(([-+]\d\.\d+)(?:; ([-+]\d\.\d+))?\)", m.group(1)):
                j = int(cell.group(1))
                c.eq(f"compare RSA {lab} step {j}", float(cell.group(2)), acc[lab][j], tol=half(3))
                c.eq(f"compare RSA {lab} step {j} gain", float(cell.group(3)), acc[lab][j] - acc[lab][0], tol=half(3))
                if cell.group(4):
                    c.eq(f"compare RSA {lab} step {j} over ref", float(cell.group(4)), acc[lab][j] - ref[j], tol=half(3))

    if "sequential" in groups:
        labels = list(groups["sequential"])
        cur = {}
        for lab, reps in groups["sequential"].items():
            pts = range(len(reps[0]["points"]))
            cur[lab] = (
                [mean([r["points"][i]["mean_tokens"] for r in reps]) for i in pts],
                [mean([r["points"][i]["accuracy"] for r in reps]) for i in pts],
                all(r["points"][-1]["truncated"] == 0 for r in reps),
            )
        rx, ry, _ = cur[labels[0]]
        for lab in labels[1:]:
            ox, oy, held = cur[lab]
            m = re.search(rf"sequential over {re.escape(lab)} sequential at equal tokens.*?\n(.*?)(?:\n\n|\Z)", text, re.S)
            if not m:
                c.fail(f"compare: no sequential table for {lab}")
                continue
            rows = [r.split() for r in m.group(1).splitlines()[1:]]
            for (x, y), row in zip(zip(rx, ry), rows):
                want = interp_log(ox, oy, x) if x >= ox[0] else None
                if want is None and x > ox[-1] and held:
                    want = oy[-1]
                c.eq(f"compare seq {lab} tokens", float(row[0]), x, tol=half(1))
                c.eq(f"compare seq {lab} ref at {x:.1f}", float(row[1]), y, tol=half(4))
                if want is None:
                    if row[2] != "-":
                        c.fail(f"compare seq {lab} at {x:.1f}: printed {row[2]}, want -")
                    continue
                c.eq(f"compare seq {lab} other at {x:.1f}", float(row[2]), want, tol=half(4))
                c.eq(f"compare seq {lab} gain at {x:.1f}", float(row[3]), y - want, tol=half(4))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--problems", help="the evaluated problems as JSONL (spiral data synth --problems N): check prompt tokens")
    ap.add_argument("--compare", action="store_true", help="also run spiral compare on the reports, in order, and check its tables")
    ap.add_argument("--max-k", type=int, default=0)
    ap.add_argument("--spiral", default="./spiral")
    a = ap.parse_args()
    problems = None
    if a.problems:
        with open(a.problems) as f:
            problems = [json.loads(line)["problem"] for line in f]
    c = Checker()
    for p in a.reports:
        rep = json.load(open(p))
        mode = rep["meta"]["mode"]
        if problems is not None and rep["meta"].get("problem_ids") and len(problems) < len(rep["meta"]["problem_ids"]):
            sys.exit(f"{p}: {len(rep['meta']['problem_ids'])} problems, --problems holds {len(problems)}")
        {"passk": check_passk, "rsa": check_rsa, "sequential": check_sequential}[mode](c, p, rep, problems)
    if a.compare:
        check_compare(c, a.reports, a.max_k, a.spiral)
    print(f"{c.count} figures compared; largest difference of the exact ones {c.maxdiff:.3g}")
    for f in c.failures:
        print("MISMATCH", f)
    sys.exit(1 if c.failures else 0)


if __name__ == "__main__":
    main()
