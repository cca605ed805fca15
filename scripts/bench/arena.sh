#!/usr/bin/env bash
# arena.sh: the CPU's shared arena (--shared-arena, on by default there)
# against each session's own memory (--shared-arena=false), side by side
# on the embedded default, alternating ROUNDS times: RL training steps
# (generation of search and aggregation traces, then the update; the
# train run's wall time also covers the final RSA on 64 held-out
# problems, --final-rsa-steps' default 4) and an RSA evaluation
# (aggregation prompts dominate both). Prints each whole run's
# wall time and peak RSS, then the medians and their ratios; the two
# settings' outputs must be the same (the metrics but for timings, the
# RSA report but for its timestamp), and the script fails otherwise.
#
#   ROUNDS   alternations (default: 3)
#   STEPS    training steps per run (default: 4)
#   OUT      scratch directory (default: a temporary one)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-4}
OUT=${OUT:-$(mktemp -d)}
env_sh="$(scripts/setup.sh)" # where setup fails, its message is the last
source "$env_sh" >/dev/null
go build -o "$OUT/spiral" .
S=$OUT/spiral
: >"$OUT/runs.tsv"
# run NAME SHARED ARGS...: one timed run, appended to runs.tsv as
# name, shared, seconds, peak RSS (KiB).
run() {
	local name=$1 shared=$2
	shift 2
	/usr/bin/time -f "%e %M" -o "$OUT/time" "$S" "$@" --threads 1 --shared-arena="$shared" >/dev/null 2>"$OUT/err" ||
		{ cat "$OUT/err" >&2; exit 1; }
	printf '%s\t%s\t%s\t%s\n' "$name" "$shared" $(cat "$OUT/time") | tee -a "$OUT/runs.tsv"
}
for r in $(seq "$ROUNDS"); do
	for shared in false true; do
		rm -rf "$OUT/train-$shared" "$OUT/rsa-$shared"
		run train "$shared" train --steps "$STEPS" --eval-every 0 --out "$OUT/train-$shared"
		run rsa "$shared" eval --mode rsa --limit 32 --rsa-steps 2 --seed 7 --out "$OUT/rsa-$shared"
	done
done
python3 - "$OUT" <<'PY'
import json, statistics, sys
out = sys.argv[1]
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if "seconds" not in k and "per_second" not in k and k != "timestamp"}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
metrics = [[strip(json.loads(l)) for l in open(f"{out}/train-{s}/metrics.jsonl")] for s in ("false", "true")]
rsa = [strip(json.load(open(f"{out}/rsa-{s}/rsa.json"))) for s in ("false", "true")]
if metrics[0] != metrics[1] or rsa[0] != rsa[1]:
    sys.exit("arena.sh: the two settings' outputs differ")
runs = [l.split("\t") for l in open(f"{out}/runs.tsv").read().splitlines()]
print("\nmedians (own memory -> shared arena), outputs identical:")
for name in ("train", "rsa"):
    med = {s: (statistics.median(float(r[2]) for r in runs if r[0] == name and r[1] == s),
               statistics.median(float(r[3]) for r in runs if r[0] == name and r[1] == s) / 1024)
           for s in ("false", "true")}
    (t0, m0), (t1, m1) = med["false"], med["true"]
    print(f"  {name}: {t0:.1f} s -> {t1:.1f} s ({t0 / t1:.2f}x faster), peak RSS {m0:.0f} -> {m1:.0f} MiB ({m1 / m0:.2f}x)")
PY
