#!/usr/bin/env bash
# make study: GRPO, agg-only and SPIRAL from the same warm start (the
# embedded default) with an equal rollout budget (24 sampled traces per
# problem: SPIRAL's 8 search + 4 subsets x 4 aggregations, GRPO's group of
# 24), SEEDS seeds each; then spiral eval of the base model and of every
# trained one (pass@k for k = 1..64 with majority@k, RSA with N = 8,
# K = 4, T = 10, and the sequential token budget), and spiral compare of
# all of it into one report directory: passk.png, rsa.png, sequential.png,
# tokens.png (accuracy against generated tokens: sequential, majority and
# RSA on one axis), entropy.png and heldout.png (over training, per
# algorithm), with the seed range as error bars, and summary.md (mean and
# range over seeds). Prints the comparison and the wall time.
#
# An interrupted study continues where it stopped when run again with the
# same OUT: finished trainings and evaluations are kept, an unfinished
# training resumes from its newest checkpoint. OUT/study.stamp records
# what the results depend on (steps, seeds, algorithms, problems, the
# embedded model); when it differs, the study starts over.
#
#   OUT      the study directory (default: runs/study)
#   STEPS    training steps per run (default: 50)
#   SEEDS    seeds (default: "1 2 3")
#   ALGOS    algorithms (default: "spiral grpo agg-only"); the first is the
#            reference of the comparison
#   EVALN    held-out problems per evaluation (default: 64)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/study}
STEPS=${STEPS:-50}
SEEDS=${SEEDS:-1 2 3}
ALGOS=${ALGOS:-spiral grpo agg-only}
EVALN=${EVALN:-64}
start=$(date +%s)
source "$(scripts/setup.sh)" >/dev/null
stamp="steps=$STEPS seeds=$SEEDS algos=$ALGOS evaln=$EVALN embedded=$(cat model/embedded/assets/* | sha256sum | cut -c1-16)"
if [[ -f $OUT/study.stamp && $(cat "$OUT/study.stamp") != "$stamp" ]]; then
	echo "study: $OUT holds a study of other settings ($(cat "$OUT/study.stamp")); starting over" >&2
	rm -rf "$OUT/runs" "$OUT/eval" "$OUT/report"
fi
mkdir -p "$OUT/runs" "$OUT/report"
echo "$stamp" >"$OUT/study.stamp"
go build -o "$OUT/spiral" .
spiral=$OUT/spiral

evaluate() { # label [--checkpoint DIR]
	local label=$1
	shift
	for mode in passk rsa sequential; do
		local extra=()
		case $mode in
		passk) extra=(--samples 64) ;;
		rsa) extra=(--population 8 --subset 4 --rsa-steps 10) ;;
		sequential) extra=(--samples 16) ;;
		esac
		local report=$OUT/eval/$label-$mode-$seed/$mode.json
		reports+=("$report")
		[[ -f $report ]] && continue # done by an earlier, interrupted study
		"$spiral" eval --quiet --mode "$mode" --limit "$EVALN" --seed 7 --label "$label" \
			--out "$OUT/eval/$label-$mode-$seed" "${extra[@]}" "$@" >/dev/null
	done
}

reports=()
runs=()
seed=base
evaluate base
for algo in $ALGOS; do
	for seed in $SEEDS; do
		run=$OUT/runs/$algo-s$seed
		if [[ ! -f $run/done ]]; then
			# Without --fresh, train resumes an interrupted run from its
			# newest checkpoint (and starts one when there is none).
			echo "study: train $algo seed $seed" >&2
			"$spiral" train --quiet --algo "$algo" --seed "$seed" --steps "$STEPS" --out "$run" \
				--eval-every 10 --final-rsa-steps 0 >>"$run.log" 2>&1 || { cat "$run.log" >&2; exit 1; }
			touch "$run/done"
		fi
		evaluate "$algo" --checkpoint "$run/checkpoints"
		runs+=(--run "$algo=$run")
	done
done
# The reference first: the first algorithm's reports lead each mode.
first=${ALGOS%% *}
ordered=()
for r in "${reports[@]}"; do [[ $r == $OUT/eval/$first-* ]] && ordered+=("$r"); done
for r in "${reports[@]}"; do [[ $r != $OUT/eval/$first-* ]] && ordered+=("$r"); done
"$spiral" compare --out "$OUT/report" "${runs[@]}" "${ordered[@]}" | tee "$OUT/report/compare.txt"
echo "study: $(( ($(date +%s) - start) / 60 )) minutes; report in $OUT/report" | tee -a "$OUT/report/compare.txt"
