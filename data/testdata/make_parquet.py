#!/usr/bin/env python3
"""Writes the Parquet test files of package data with pyarrow, a Parquet
implementation other than the one the product reads with.

Usage: python3 make_parquet.py OUTDIR

For every NAME it writes OUTDIR/NAME.parquet and OUTDIR/NAME.want.json; the
latter holds what data.Load must return, derived here from the rows
themselves (not from the Go code):
  {"problems": [[problem, answer], ...], "skipped": N,
   "problem_field": F, "answer_field": F}
and, where the ids are checked, "ids": [id, ...].
Regenerate the committed copies with: python3 make_parquet.py .
"""
import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq

SUFFIX = " Let's think step by step and output the final answer within \\boxed{}."


def verl(outdir):
    # verl layout: chat prompt (list of structs), nested ground truth as
    # double, as in the POLARIS evaluation files. Two row groups.
    questions = ["What is 2+3?", "What is $\\frac{1}{2}+\\frac{1}{2}$?", "Name a prime above 10.", "What is 7*6?"]
    truths = [5.0, 1.0, 11.0, 42.5]
    prompt_t = pa.list_(pa.struct([("content", pa.string()), ("role", pa.string())]))
    rm_t = pa.struct([("ground_truth", pa.float64()), ("style", pa.string())])
    table = pa.table({
        "data_source": pa.array(["t"] * 4),
        "prompt": pa.array([[{"content": "Be brief.", "role": "system"}, {"content": q + SUFFIX, "role": "user"}] for q in questions], type=prompt_t),
        "ability": pa.array(["math"] * 4),
        "reward_model": pa.array([{"ground_truth": g, "style": "rule"} for g in truths], type=rm_t),
        "extra_info": pa.array([{"index": i, "split": "test"} for i in range(4)]),
    })
    pq.write_table(table, os.path.join(outdir, "verl.parquet"), row_group_size=2)
    want = {
        "problems": [[q, ("%d" % g) if g == int(g) else repr(g)] for q, g in zip(questions, truths)],
        "skipped": 0,
        "problem_field": "prompt",
        "answer_field": "reward_model.ground_truth",
    }
    with open(os.path.join(outdir, "verl.want.json"), "w") as f:
        json.dump(want, f, indent=1)


def flat(outdir):
    # Flat columns (string problem, int64 answer), zstd-compressed; one
    # empty and one duplicate problem are skipped.
    problems = ["Compute 1+1.", "", "Compute 2*3.", "Compute 1+1.", "Compute 9-4."]
    answers = [2, 7, 6, 2, 5]
    table = pa.table({
        "id": pa.array(["a", "b", "c", "d", "e"]),
        "question": pa.array(problems, type=pa.string()),
        "answer": pa.array(answers, type=pa.int64()),
    })
    pq.write_table(table, os.path.join(outdir, "flat.parquet"), compression="zstd")
    seen, kept, skipped = set(), [], 0
    for p, a in zip(problems, answers):
        if not p.strip() or p in seen:
            skipped += 1
            continue
        seen.add(p)
        kept.append([p, str(a)])
    want = {"problems": kept, "skipped": skipped, "problem_field": "question", "answer_field": "answer"}
    with open(os.path.join(outdir, "flat.want.json"), "w") as f:
        json.dump(want, f, indent=1)


def decimal_answers(outdir):
    # DECIMAL answers (decimal128, as pandas writes Python Decimals): the
    # gold is the number in its shortest decimal form.
    from decimal import Decimal
    problems = ["Compute 3/2.", "Compute 4/2.", "Compute 1/10."]
    answers = [Decimal("1.50"), Decimal("2.00"), Decimal("0.10")]
    table = pa.table({
        "problem": pa.array(problems),
        "answer": pa.array(answers, type=pa.decimal128(9, 2)),
    })
    pq.write_table(table, os.path.join(outdir, "decimal.parquet"))
    want = {
        "problems": [[p, format(a.normalize(), "f")] for p, a in zip(problems, answers)],
        "skipped": 0,
        "problem_field": "problem",
        "answer_field": "answer",
    }
    with open(os.path.join(outdir, "decimal.want.json"), "w") as f:
        json.dump(want, f, indent=1)


def typed(outdir):
    # Columns whose logical type the Go reader gives as something else than
    # their value (DATE as a day count, FLOAT16 as two bytes, TIMESTAMP as a
    # count of units): unused they are ignored; named as the answer they
    # are an error, never a wrong gold answer.
    import datetime
    import numpy as np
    table = pa.table({
        "problem": pa.array(["Compute 1+1.", "Compute 2+2."]),
        "answer": pa.array([2, 4], type=pa.int64()),
        "when": pa.array([datetime.date(2024, 1, 2), datetime.date(2025, 3, 4)], type=pa.date32()),
        "half": pa.array(np.array([1.5, 2.5], dtype=np.float16), type=pa.float16()),
        "at": pa.array([datetime.datetime(2024, 1, 2, 3, 4, 5)] * 2, type=pa.timestamp("ms")),
    })
    pq.write_table(table, os.path.join(outdir, "typed.parquet"))
    want = {"problems": [["Compute 1+1.", "2"], ["Compute 2+2.", "4"]], "skipped": 0, "problem_field": "problem", "answer_field": "answer"}
    with open(os.path.join(outdir, "typed.want.json"), "w") as f:
        json.dump(want, f, indent=1)


def nested_typed(outdir):
    # The same types in a struct, as a verl file's reward_model holds its
    # ground truth: named by a dotted path they are an error too.
    import datetime
    import numpy as np
    rm_t = pa.struct([("when", pa.date32()), ("half", pa.float16()), ("ground_truth", pa.string())])
    table = pa.table({
        "problem": pa.array(["Compute 1+1.", "Compute 2+2."]),
        "answer": pa.array([2, 4], type=pa.int64()),
        "reward_model": pa.array([
            {"when": datetime.date(2024, 1, 2), "half": np.float16(1.5), "ground_truth": "2"},
            {"when": datetime.date(2025, 3, 4), "half": np.float16(2.5), "ground_truth": "4"},
        ], type=rm_t),
    })
    pq.write_table(table, os.path.join(outdir, "nestedtyped.parquet"))
    want = {"problems": [["Compute 1+1.", "2"], ["Compute 2+2.", "4"]], "skipped": 0, "problem_field": "problem", "answer_field": "answer"}
    with open(os.path.join(outdir, "nestedtyped.want.json"), "w") as f:
        json.dump(want, f, indent=1)


def float32_answers(outdir):
    # FLOAT answers (float32): the gold is the shortest decimal that reads
    # back as the same float32, 0.1 and not its float64 widening
    # 0.10000000149011612.
    import numpy as np
    problems = ["Compute 1/10.", "Compute 5/2.", "Compute 6/2.", "Compute 1/1000.", "Compute 10^10."]
    answers = np.array([0.1, 2.5, 3.0, 0.001, 1e10], dtype=np.float32)
    table = pa.table({"problem": pa.array(problems), "answer": pa.array(answers, type=pa.float32())})
    pq.write_table(table, os.path.join(outdir, "float32.parquet"))
    want = {
        "problems": [[p, np.format_float_positional(a, trim="-")] for p, a in zip(problems, answers)],
        "skipped": 0,
        "problem_field": "problem",
        "answer_field": "answer",
    }
    with open(os.path.join(outdir, "float32.want.json"), "w") as f:
        json.dump(want, f, indent=1)


def uint64_answers(outdir):
    # UINT64 ids and answers (INT64 with an unsigned logical type), at the
    # top level and in a struct: values from 2^63 up are read as the
    # unsigned numbers they are, never as negative ones.
    problems = ["Compute 2^64-1.", "Compute 2^63.", "Compute 3+4."]
    answers = [2**64 - 1, 2**63, 7]
    table = pa.table({
        "id": pa.array([2**64 - 2, 2**63 + 1, 3], type=pa.uint64()),
        "problem": pa.array(problems),
        "answer": pa.array(answers, type=pa.uint64()),
        "reward_model": pa.array([{"ground_truth": a} for a in answers], type=pa.struct([("ground_truth", pa.uint64())])),
    })
    pq.write_table(table, os.path.join(outdir, "uint64.parquet"))
    want = {
        "problems": [[p, str(a)] for p, a in zip(problems, answers)],
        "ids": [str(2**64 - 2), str(2**63 + 1), "3"],
        "skipped": 0,
        "problem_field": "problem",
        "answer_field": "answer",
    }
    with open(os.path.join(outdir, "uint64.want.json"), "w") as f:
        json.dump(want, f, indent=1)


def wrongtype(outdir):
    # The answer column is a list: Load must fail naming row 0 and the field.
    table = pa.table({"problem": pa.array(["p"]), "answer": pa.array([[1, 2]])})
    pq.write_table(table, os.path.join(outdir, "wrongtype.parquet"))


def latin1(outdir):
    # A BINARY answer column holding Latin-1 bytes: Load must fail naming
    # row 1 and the field, not keep the bytes as they are.
    table = pa.table({"problem": pa.array(["p", "q"]), "answer": pa.array([b"1", b"90\xb0"], type=pa.binary())})
    pq.write_table(table, os.path.join(outdir, "latin1.parquet"))


def empty(outdir):
    table = pa.table({"problem": pa.array([], type=pa.string()), "answer": pa.array([], type=pa.string())})
    pq.write_table(table, os.path.join(outdir, "empty.parquet"))


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    for fn in (verl, flat, decimal_answers, typed, nested_typed, float32_answers, uint64_answers, wrongtype, latin1, empty):
        fn(out)
