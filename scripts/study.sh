#!/usr/bin/env bash
# make study: GRPO, agg-only and SPIRAL from the same warm start (the
# embedded default) with an equal rollout budget (24 sampled traces per
# problem: SPIRAL's 8 search + 4 subsets x 4 aggregations, GRPO's group of
# 24), SEEDS seeds each; then spiral eval of the base model and of every
# trained one (pass@k and majority@k from PASSK_SAMPLES samples, RSA
# with N = 8, K = 4, T = 10, and the sequential token budget), and spiral
# compare of all of it into one report directory: passk.png, rsa.png,
# sequential.png, tokens.png (accuracy against generated tokens:
# sequential, majority and RSA on one axis), entropy.png,
# search-entropy.png (the search traces' tokens alone) and heldout.png
# (over training, per algorithm), with the seed range as error bars, and
# summary.md (mean and range over seeds), and selfcheck.md
# (scripts/selfcheck over the RSA traces: how far each model's own checks
# can be trusted, what its first aggregation makes of its candidates, and
# how its RSA populations keep a right answer step by step). Prints the
# comparison and the wall time. A run evaluated at an earlier checkpoint
# than its last (a damaged one that eval skips) is named in the report
# (compare.txt, summary.md) and on stderr.
#
# An interrupted study continues where it stopped when run again with the
# same OUT: finished trainings and evaluations are kept, an unfinished
# training resumes from its newest checkpoint. OUT/study.stamp records
# the settings the results depend on (steps, seeds, algorithms, problems
# per step and per evaluation, the embedded model; not spiral's own
# code); when it differs, the study starts over (removing OUT's runs/,
# eval/, report/ and logs/). An OUT that holds any of those but no stamp
# is not a study's and is refused. One study at a time in an OUT: while
# one runs there (its script or its jobs hold OUT/.study.lock), another
# waits up to LOCK_WAIT seconds for it to stop and is refused (exit 1) if
# it has not.
#
#   OUT      the study directory (default: runs/study)
#   STEPS    training steps per run (default: 50)
#   SEEDS    seeds, distinct whole numbers >= 1 (default: "1 2 3")
#   ALGOS    algorithms, each once, of spiral, grpo, agg-only, search-only,
#            spiral-2r and spiral-own (default: "spiral grpo agg-only");
#            the first is the reference of the comparison. Besides the
#            --algo names, spiral-2r is SPIRAL with two aggregation rounds
#            at the same 24 traces (--k 4 --n2 2 --agg-rounds 2), and
#            spiral-own SPIRAL whose search traces are credited for their
#            own reward too (--search-own-reward 1; not in the paper)
#   PROBLEMS problems per training step, every algorithm alike (default:
#            16, nearer the paper's 256 than train's default of 8, the
#            study's default before: 40 minutes on 2 idle cores; 32
#            takes longer than the 60-minute budget: see the README)
#   EVALN    held-out problems of each spiral eval after training (its
#            --limit; default: 128, the held-out problems eval takes from
#            the embedded task's test split by default (the first 128 of
#            its 1,134; a larger number takes that many of them, up to
#            1,134); fewer are noisier: at 64 the seed
#            ranges of SPIRAL's and GRPO's RSA touched). The evaluations
#            during training (heldout.png) keep train's 64 problems
#            (--eval-problems) whatever EVALN is
#   PASSK_SAMPLES samples per problem of the pass@k evaluations
#            (default: 256). The scaling efficiency is compared at the
#            reference's k <= 64 (compare --max-k 64); the other models'
#            curves beyond 64 say how many samples they need where that
#            is more than 64 (with 64 samples a ratio at k is capped at
#            64/k, so 2x could not be measured above k = 32)
#   JOBS     trainings and evaluations run at once (default: the number of
#            cores), each ONNX Runtime session on one thread when JOBS > 1:
#            the embedded model is too small for two threads to beat two
#            processes
#   LOCK_WAIT seconds to wait for another study running in OUT to stop
#            (default: 15, long enough for a study stopped by Ctrl-C to
#            save its work)
#
# The numbers are whole numbers >= 1 (of at most 9 digits). A knob set to
# the empty string, or to a value outside these, is refused (exit 2)
# before anything is built or run; unset it for its default.
set -euo pipefail
# The braces make bash read the whole script before running any of it: a
# study runs for most of an hour, and bash reads a script as it goes, so
# editing or checking out this file meanwhile would run a garbled rest.
{
cd "$(dirname "$0")/.."
OUT=${OUT-runs/study}
STEPS=${STEPS-50}
SEEDS=${SEEDS-1 2 3}
ALGOS=${ALGOS-spiral grpo agg-only}
PROBLEMS=${PROBLEMS-16}
EVALN=${EVALN-128}
PASSK_SAMPLES=${PASSK_SAMPLES-256}
JOBS=${JOBS-$(nproc)}
LOCK_WAIT=${LOCK_WAIT-15}
# The knobs are checked before anything is built or run: a bad one found
# later would fail the study after the jobs before it had run.
refuse() { # knob want: exit 2 naming the knob, its value and what it wants
	echo "study: $1=${!1}: want $2" >&2
	exit 2
}
whole() { # value: what it should be when it is not a whole number >= 1 that bash's arithmetic and spiral's flags take
	if [[ ! $1 =~ ^[1-9][0-9]*$ ]]; then
		echo "a whole number >= 1"
	elif ((${#1} > 9)); then
		echo "a whole number of at most 9 digits"
	fi
}
[[ -n $OUT ]] || refuse OUT "a directory"
[[ ! -e $OUT || -d $OUT ]] || refuse OUT "a directory (it exists and is not one)"
# Starting over removes OUT's runs/, eval/, report/ and logs/: only a
# study's own (it has study.stamp), never those of another directory
# (OUT=. in the checkout holds make train's runs/).
for sub in runs eval report logs; do
	[[ -f $OUT/study.stamp || ! -e $OUT/$sub ]] ||
		refuse OUT "a study's directory or a new one (it holds $sub/ but no study.stamp)"
done
for knob in STEPS PROBLEMS EVALN PASSK_SAMPLES JOBS LOCK_WAIT; do
	want=$(whole "${!knob}")
	[[ -z $want ]] || refuse "$knob" "$want"
done
read -rd "" -a words <<<"$SEEDS" || true # every line's words
((${#words[@]})) || refuse SEEDS "one or more seeds"
for seed in "${words[@]}"; do
	want=$(whole "$seed")
	[[ -z $want ]] || refuse SEEDS "${want/a whole number/whole numbers} ($seed is not)"
done
[[ $(printf '%s\n' "${words[@]}" | sort | uniq -d) == "" ]] || refuse SEEDS "distinct seeds"
SEEDS=${words[*]}
read -rd "" -a words <<<"$ALGOS" || true
((${#words[@]})) || refuse ALGOS "one or more algorithms"
for algo in "${words[@]}"; do
	[[ $algo =~ ^(spiral|grpo|agg-only|search-only|spiral-2r|spiral-own)$ ]] ||
		refuse ALGOS "spiral, grpo, agg-only, search-only, spiral-2r or spiral-own ($algo is not)"
done
[[ $(printf '%s\n' "${words[@]}" | sort | uniq -d) == "" ]] || refuse ALGOS "each algorithm once"
ALGOS=${words[*]}
# One study at a time in OUT: a second one would start over under the
# first (other settings), or truncate its job logs, remove its failure
# markers and fail both on each other's run and evaluation locks. The
# lock is held until the script and every job it started (they inherit
# it) are gone: a stopped study's jobs save their work first, which the
# wait of up to LOCK_WAIT s lets a study rerun at once after Ctrl-C outlast.
# flock exits 1 when the lock is taken; another status is a file system
# without locks (flock says which error), where the study goes on
# unlocked, as spiral's own locks do.
if command -v flock >/dev/null 2>&1; then
	mkdir -p "$OUT"
	exec 8>>"$OUT/.study.lock"
	locked=0
	flock -w "$LOCK_WAIT" 8 || locked=$?
	if ((locked == 1)); then
		echo "study: $OUT: another study is running there (it holds $OUT/.study.lock, as a stopped study's jobs do until they have saved their work): wait for it, or give another OUT" >&2
		exit 1
	fi
fi
start=$(date +%s)
env_sh="$(scripts/setup.sh)" # where setup fails, its message is the last
source "$env_sh" >/dev/null
# PROBLEMS enters the stamp only when not 8 (the default before it was
# 16), so that a study made before the knob existed is still recognised.
per_step=""
[[ $PROBLEMS == 8 ]] || per_step=" problems=$PROBLEMS"
stamp="steps=$STEPS seeds=$SEEDS algos=$ALGOS$per_step evaln=$EVALN embedded=$(cat model/embedded/assets/* | sha256sum | cut -c1-16)"
if [[ -f $OUT/study.stamp && $(cat "$OUT/study.stamp") != "$stamp" ]]; then
	echo "study: $OUT holds a study of other settings; starting over" >&2
	rm -rf "$OUT/runs" "$OUT/eval" "$OUT/report" "$OUT/logs"
fi
# An interrupted study takes its running jobs with it (a rerun must not
# find a second trainer in a run directory): each job's subshell and the
# spiral it runs, which killing the subshell alone leaves running.
# shellcheck disable=SC2329 # the EXIT trap runs it
stop_jobs() {
	local p
	for p in $(jobs -rp); do
		# shellcheck disable=SC2046 # the pids of p's children
		kill "$p" $(pgrep -P "$p" 2>/dev/null) 2>/dev/null || true
	done
}
trap stop_jobs EXIT
mkdir -p "$OUT/runs" "$OUT/report" "$OUT/logs"
rm -f "$OUT"/logs/*.failed
echo "$stamp" >"$OUT/study.stamp"
go build -o "$OUT/spiral" .
spiral=$OUT/spiral
threads=()
((JOBS > 1)) && threads=(--threads 1)
modes=(passk rsa sequential)

evaluate() { # label seed [--checkpoint DIR]: the evaluations not done yet
	local label=$1 seed=$2
	shift 2
	for mode in "${modes[@]}"; do
		local extra=()
		case $mode in
		passk) extra=(--samples "$PASSK_SAMPLES") ;;
		rsa) extra=(--population 8 --subset 4 --rsa-steps 10 --traces) ;;
		sequential) extra=(--samples 16) ;;
		esac
		local dir=$OUT/eval/$label-$mode-$seed
		# Done by an earlier, interrupted study (a pass@k evaluation
		# only with the samples asked for now).
		[[ -f $dir/$mode.json && ($mode != rsa || -f $dir/rsa.traces.jsonl) ]] &&
			[[ $mode != passk || $(grep -c "\"samples\": $PASSK_SAMPLES,\$" "$dir/passk.json") == 1 ]] &&
			continue
		"$spiral" eval --quiet --mode "$mode" --limit "$EVALN" --seed 7 --label "$label" "${threads[@]}" \
			--out "$dir" "${extra[@]}" "$@" >/dev/null || return 1
	done
}

train_flags() { # algo: the training flags of an ALGOS name
	case $1 in
	spiral-2r) echo --algo spiral --k 4 --n2 2 --agg-rounds 2 ;;
	spiral-own) echo --algo spiral --search-own-reward 1 ;;
	*) echo --algo "$1" ;;
	esac
}

run_job() { # algo seed: train (or resume) one run, then evaluate it; "base" evaluates the warm start
	local algo=$1 seed=$2
	if [[ $algo == base ]]; then
		evaluate base base
		return
	fi
	local run=$OUT/runs/$algo-s$seed
	if [[ ! -f $run/done ]]; then
		# Without --fresh, train resumes an interrupted run from its
		# newest checkpoint (and starts one when there is none).
		# shellcheck disable=SC2046 # train_flags' words are flags
		"$spiral" train --quiet $(train_flags "$algo") --problems "$PROBLEMS" --seed "$seed" --steps "$STEPS" --out "$run" "${threads[@]}" \
			--eval-every 10 --final-rsa-steps 0 >>"$run.log" 2>&1 || { cat "$run.log"; return 1; }
		touch "$run/done"
	fi
	evaluate "$algo" "$seed" --checkpoint "$run/checkpoints"
}

job() { # algo seed: run_job, logged, a failure marked
	local log=$OUT/logs/$1-$2.log
	: >"$log"
	echo "study: $1 $2: start ($(date +%T))" >&2
	if run_job "$@" >>"$log" 2>&1; then
		echo "study: $1 $2: done ($(date +%T))" >&2
	else
		touch "$OUT/logs/$1-$2.failed"
		echo "study: $1 $2: failed" >&2
	fi
}

# The jobs, JOBS at a time, the longest first so that no core idles at
# the end: SPIRAL's runs (search and aggregation traces), agg-only's,
# GRPO's and any other algorithm's, then the base model's evaluations.
todo=()
for algo in spiral agg-only grpo $ALGOS; do
	[[ " $ALGOS " == *" $algo "* && " ${todo[*]} " != *" $algo "* ]] || continue
	for seed in $SEEDS; do
		todo+=("$algo $seed")
	done
done
todo+=("base base")
for j in "${todo[@]}"; do
	while (($(jobs -rp | wc -l) >= JOBS)); do
		wait -n || true
	done
	# shellcheck disable=SC2086 # "algo seed"
	job $j &
done
wait
if compgen -G "$OUT/logs/*.failed" >/dev/null; then
	for f in "$OUT"/logs/*.failed; do
		echo "study: ${f##*/} (log: ${f%.failed}.log):" >&2
		cat "${f%.failed}.log" >&2
	done
	exit 1
fi

# The reports: the reference (the first algorithm) first, then the base
# model, then the other algorithms.
reports=()
runs=()
first=${ALGOS%% *}
for algo in $first base ${ALGOS#"$first"}; do
	seeds=$SEEDS
	[[ $algo == base ]] && seeds=base
	for seed in $seeds; do
		for mode in "${modes[@]}"; do
			reports+=("$OUT/eval/$algo-$mode-$seed/$mode.json")
		done
		[[ $algo == base ]] || runs+=(--run "$algo=$OUT/runs/$algo-s$seed")
	done
done
"$spiral" compare --out "$OUT/report" --max-k 64 "${runs[@]}" "${reports[@]}" | tee "$OUT/report/compare.txt"
# eval --checkpoint takes a run's newest checkpoint that loads: a damaged
# last one is skipped with a warning in the job's log (truncated by a
# rerun, whose evaluations are kept), and the report names the one read
# (meta.model, MODEL@RUN/ckpt-N). One of an earlier step than STEPS is
# said in the report (compare.txt, summary.md) and on stderr.
stale=()
for algo in $ALGOS; do
	for seed in $SEEDS; do
		want=$algo-s$seed/$(printf 'ckpt-%06d' "$STEPS")
		for mode in "${modes[@]}"; do
			got=$(sed -n '/^ *"model": "/{s/^ *"model": "[^"]*@\([^"]*\)",$/\1/p;q;}' "$OUT/eval/$algo-$mode-$seed/$mode.json")
			[[ $got == "$want" ]] && continue
			stale+=("study: warning: $algo seed $seed was evaluated at ${got:-an unnamed checkpoint}, not $want, its last step: its newer checkpoints did not load (damaged: its evaluations' warnings say why; rm -r $OUT/eval/$algo-*-$seed $OUT/runs/$algo-s$seed and rerun to train it again)")
			break
		done
	done
done
if ((${#stale[@]})); then
	printf '\n%s\n' "${stale[@]}" >>"$OUT/report/summary.md"
	printf '%s\n' "${stale[@]}" | tee -a "$OUT/report/compare.txt" >&2
fi
# The self-checks of every model's RSA population (scripts/selfcheck).
go build -o "$OUT/selfcheck" ./scripts/selfcheck
traces=()
for r in "${reports[@]}"; do
	[[ $r == */rsa.json ]] && traces+=("$(basename "$(dirname "$r")" | sed 's/-rsa-/-/')=${r%.json}.traces.jsonl")
done
"$OUT/selfcheck" "${traces[@]}" | tee "$OUT/report/selfcheck.md"
echo "study: $((($(date +%s) - start) / 60)) minutes, $JOBS jobs at once; report in $OUT/report" | tee -a "$OUT/report/compare.txt"
exit
}
