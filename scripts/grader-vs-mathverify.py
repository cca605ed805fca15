#!/usr/bin/env python3
"""Side-by-side benchmark: spiral's grader (Go) against Math-Verify (Python).

Runs both graders on the suites the grader's tests use and prints, per
suite, how often each agrees with the expected verdict, how often the two
agree with each other, and the cases where they disagree. Math-Verify is
the reference; it is not part of the product, so this script is run by
hand and nothing depends on it.

Suites (each skipped when its file is absent):
  mathverify  grader/testdata/math_verify_cases.jsonl, each record run the
              way its upstream test ran it (see grader/testdata/SOURCES.md)
  golden      grader/testdata/golden_cases.jsonl (the Go grading tables),
              through Grade and Math-Verify's default parse/verify
  math500     ../shared/data/math500/.../MATH500.jsonl: each reference
              solution against its own answer (expected true) and against
              the next problem's answer (expected false when they differ)
  gsm8k       ../shared/data/gsm8k/.../test.jsonl: the same with the
              number after "####"

Install Math-Verify once, in a virtual environment outside the repository:
  python3 -m venv ~/.cache/spiral/mathverify
  ~/.cache/spiral/mathverify/bin/pip install math-verify==0.9.0 antlr4-python3-runtime==4.13.2
(math-verify 0.9.0 names the antlr extra differently; the runtime must be
4.13.2 for its generated parser.)

Run from the repository root (Go must be on PATH; the grader needs no cgo):
  ~/.cache/spiral/mathverify/bin/python scripts/grader-vs-mathverify.py
Options: --suite NAME (repeatable), --limit N (records per suite),
--show N (disagreements printed per suite, default 40), --json FILE (write
every verdict pair).
"""

import argparse
import json
import logging
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "data")


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def wrap(gold):
    """Math-Verify extracts LaTeX only from math delimiters or boxes."""
    if "$" in gold or "\\boxed" in gold or "\\(" in gold or "\\[" in gold:
        return gold
    return "$" + gold + "$"


# Each case: id, suite, expected (bool or None), go request, mv thunk.


def mathverify_cases(limit):
    from math_verify import (ExprExtractionConfig, LatexExtractionConfig,
                             StringExtractionConfig, parse, verify)
    from math_verify.parser import NormalizationConfig

    path = os.path.join(ROOT, "grader", "testdata", "math_verify_cases.jsonl")
    if not os.path.exists(path):
        return []
    out = []
    for r in read_jsonl(path)[:limit]:
        cfg = r["config"]
        harness = cfg["harness"]
        fr = cfg.get("float_rounding") or 6
        strict = cfg.get("strict", True)
        asr = cfg.get("allow_set_relation_comp", False)
        types = cfg.get("match_types") or ["latex", "expr"]
        go = {"id": r["id"], "response": r["prediction"], "gold": r["gold"], "config": {
            "float_rounding": cfg.get("float_rounding") or 0, "allow_set_relation": asr}}
        if cfg.get("strict") is not None:
            go["config"]["strict"] = strict

        if harness in ("compare_strings", "parse_verify_defaults"):
            go["mode"] = "extract"
            if harness == "compare_strings":
                go["config"]["targets"] = types
                targets = []
                if "latex" in types:
                    targets.append(LatexExtractionConfig(boxed_match_priority=0))
                if "expr" in types:
                    targets.append(ExprExtractionConfig())
            else:
                targets = [LatexExtractionConfig(), ExprExtractionConfig()]

            def mv(r=r, targets=targets, fr=fr, strict=strict, asr=asr):
                return verify(parse(r["gold"], targets), parse(r["prediction"], targets),
                              float_rounding=fr, strict=strict, allow_set_relation_comp=asr)
        elif harness == "string_extraction":
            go["mode"] = "grade"
            go["config"]["choices"] = cfg["strings"]
            targets = [StringExtractionConfig(strings=tuple(cfg["strings"]))]

            def mv(r=r, targets=targets):
                return verify(parse(r["gold"], targets), parse(r["prediction"], targets))
        elif harness == "sympy_expr_eq":
            go["mode"] = "equal"

            def mv(r=r, fr=fr):
                return verify(parse(wrap(r["gold"])), parse(wrap(r["prediction"])), float_rounding=fr)
        elif harness == "parse_only":
            go["mode"] = "extract_pred"
            go["config"]["targets"] = ["latex"]
            ext = cfg.get("extraction", "")
            if "boxed_match_priority=100" in ext:
                go["config"]["anchor_first"] = True
                target = LatexExtractionConfig(boxed_match_priority=100)
            elif "malformed_operators=True" in ext:
                target = LatexExtractionConfig(normalization_config=NormalizationConfig(malformed_operators=True))
            else:
                target = LatexExtractionConfig()

            def mv(r=r, target=target):
                return verify(parse(wrap(r["gold"])), parse(r["prediction"], [target]))
        else:
            continue
        out.append({"id": r["id"], "suite": "mathverify", "expected": r["expected"],
                    "gold": r["gold"], "pred": r["prediction"], "go": go, "mv": mv})
    return out


def grade_case(suite, cid, response, gold, expected, parse, verify):
    def mv():
        return verify(parse(wrap(gold)), parse(response))
    return {"id": cid, "suite": suite, "expected": expected, "gold": gold, "pred": response,
            "go": {"id": cid, "mode": "grade", "response": response, "gold": gold, "config": {}},
            "mv": mv}


def golden_cases(limit):
    from math_verify import parse, verify
    path = os.path.join(ROOT, "grader", "testdata", "golden_cases.jsonl")
    if not os.path.exists(path):
        return []
    return [grade_case("golden", r["suite"] + "/" + r["name"], r["response"], r["gold"], r["want"], parse, verify)
            for r in read_jsonl(path)[:limit]]


def same_answer(a, b):
    """Rough answer identity for the cross pairs: spacing and a leading
    "x=" label do not count (5 and x=5 are the same answer)."""
    def key(s):
        s = s.replace(" ", "").replace("\\left", "").replace("\\right", "")
        if len(s) > 2 and s[0].isalpha() and s[1] == "=":
            s = s[2:]
        return s
    return key(a) == key(b)


def math500_cases(limit):
    from math_verify import parse, verify
    path = os.path.join(SHARED, "math500", "zai-org__glm-simple-evals", "MATH500.jsonl")
    if not os.path.exists(path):
        return []
    recs = read_jsonl(path)[:limit]
    out = []
    for i, r in enumerate(recs):
        o = recs[(i + 1) % len(recs)]
        out.append(grade_case("math500", r["unique_id"] + " own", r["solution"], r["Answer"], True, parse, verify))
        if not same_answer(o["Answer"], r["Answer"]):
            out.append(grade_case("math500", r["unique_id"] + " next", r["solution"], o["Answer"], False, parse, verify))
    return out


def gsm8k_gold(answer):
    return answer.rsplit("####", 1)[-1].strip().replace(",", "")


def gsm8k_cases(limit):
    from math_verify import parse, verify
    path = os.path.join(SHARED, "gsm8k", "openai__grade-school-math", "test.jsonl")
    if not os.path.exists(path):
        return []
    recs = read_jsonl(path)[:limit]
    out = []
    for i, r in enumerate(recs):
        gold, other = gsm8k_gold(r["answer"]), gsm8k_gold(recs[(i + 1) % len(recs)]["answer"])
        out.append(grade_case("gsm8k", f"{i} own", r["answer"], gold, True, parse, verify))
        if other != gold:
            out.append(grade_case("gsm8k", f"{i} next", r["answer"], other, False, parse, verify))
    return out


SUITES = {"mathverify": mathverify_cases, "golden": golden_cases, "math500": math500_cases, "gsm8k": gsm8k_cases}


def run_go(cases):
    """Grades every case with the Go grader in one process."""
    payload = "".join(json.dumps(c["go"], ensure_ascii=False) + "\n" for c in cases)
    proc = subprocess.run(["go", "run", "./scripts/gradejsonl"], cwd=ROOT, input=payload.encode(),
                          capture_output=True, check=False)
    if proc.returncode != 0:
        sys.exit("grader-vs-mathverify: go run ./scripts/gradejsonl failed:\n" + proc.stderr.decode())
    results = [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]
    if len(results) != len(cases):
        sys.exit(f"grader-vs-mathverify: {len(results)} Go results for {len(cases)} cases")
    return results


def run_mv(cases):
    out = []
    start = time.time()
    for k, c in enumerate(cases):
        try:
            out.append(bool(c["mv"]()))
        except Exception as e:  # Math-Verify raises on some inputs; count it as "not equal"
            out.append(False)
            c["mv_error"] = repr(e)[:200]
        if (k + 1) % 200 == 0:
            print(f"  math-verify: {k + 1}/{len(cases)} ({time.time() - start:.0f} s)", file=sys.stderr)
    return out


def short(s, n=110):
    s = s.replace("\n", " ")
    return s if len(s) <= n else "…" + s[-(n - 1):]


def pct(a, b):
    return f"{100 * a / b:.1f}%" if b else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", action="append", choices=sorted(SUITES), help="suites to run (default all)")
    ap.add_argument("--limit", type=int, default=None, help="records per suite")
    ap.add_argument("--show", type=int, default=40, help="disagreements printed per suite")
    ap.add_argument("--json", help="write every verdict pair to this JSON-lines file")
    args = ap.parse_args()
    logging.disable(logging.WARNING)

    suites = args.suite or list(SUITES)
    cases = []
    for s in suites:
        got = SUITES[s](args.limit)
        print(f"{s}: {len(got)} cases", file=sys.stderr)
        cases += got
    if not cases:
        sys.exit("grader-vs-mathverify: no suite found")
    t0 = time.time()
    go = run_go(cases)
    t_go = time.time() - t0
    t0 = time.time()
    mv = run_mv(cases)
    t_mv = time.time() - t0
    print(f"Go grader: {t_go:.1f} s for {len(cases)} cases (including go run); Math-Verify 0.9.0: {t_mv:.1f} s")
    print()

    rows = []
    dump = []
    for s in suites:
        idx = [i for i, c in enumerate(cases) if c["suite"] == s]
        if not idx:
            continue
        n = len(idx)
        known = [i for i in idx if cases[i]["expected"] is not None]
        go_ok = sum(go[i]["correct"] == cases[i]["expected"] for i in known)
        mv_ok = sum(mv[i] == cases[i]["expected"] for i in known)
        same = sum(go[i]["correct"] == mv[i] for i in idx)
        rows.append((s, n, pct(go_ok, len(known)), pct(mv_ok, len(known)), pct(same, n),
                     f"{go_ok}/{len(known)}", f"{mv_ok}/{len(known)}"))
        for i in idx:
            dump.append({"suite": s, "id": cases[i]["id"], "expected": cases[i]["expected"],
                         "go": go[i]["correct"], "mv": mv[i], "go_extracted": go[i]["extracted"],
                         "go_reason": go[i]["reason"], "mv_error": cases[i].get("mv_error")})

    print(f"{'suite':<11} {'cases':>6} {'Go right':>16} {'MV right':>16} {'Go = MV':>8}")
    for s, n, g, m, a, gn, mn in rows:
        print(f"{s:<11} {n:>6} {g:>7} {gn:>8} {m:>7} {mn:>8} {a:>8}")
    total = len(cases)
    known = [i for i, c in enumerate(cases) if c["expected"] is not None]
    print(f"{'all':<11} {total:>6} {pct(sum(go[i]['correct'] == cases[i]['expected'] for i in known), len(known)):>16} "
          f"{pct(sum(mv[i] == cases[i]['expected'] for i in known), len(known)):>16} "
          f"{pct(sum(go[i]['correct'] == mv[i] for i in range(total)), total):>8}")

    for s in suites:
        diff = [i for i, c in enumerate(cases) if c["suite"] == s and go[i]["correct"] != mv[i]]
        if not diff:
            continue
        go_right = sum(go[i]["correct"] == cases[i]["expected"] for i in diff)
        print(f"\n{s}: {len(diff)} disagreements (Go right on {go_right}, Math-Verify right on {len(diff) - go_right})")
        for i in diff[:args.show]:
            c = cases[i]
            who = "Go" if go[i]["correct"] == c["expected"] else "MV"
            print(f"  [{who} right] {c['id']}: expected {c['expected']}, Go {go[i]['correct']}, MV {mv[i]}")
            print(f"      gold: {short(c['gold'])}")
            print(f"      pred: {short(c['pred'])}")
            print(f"      Go extracted {short(go[i]['extracted'], 60)!r} ({go[i]['reason'][:80]})"
                  + (f"; MV error {c['mv_error']}" if c.get("mv_error") else ""))
        if len(diff) > args.show:
            print(f"  ... {len(diff) - args.show} more (--show)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            for d in dump:
                f.write(json.dumps(d, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
