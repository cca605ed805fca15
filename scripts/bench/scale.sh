#!/usr/bin/env bash
# make bench-scale: spiral's training executor and generation on random-
# weight exports of the real Qwen3-0.6B config (28 layers, and an 8-layer
# variant), side by side with the same training step in PyTorch with
# gradient checkpointing, and `spiral plan`'s predictions of every peak.
# Prints a Markdown table (scripts/bench/table.py); the raw JSON lines stay
# in $BENCH_DIR/results. About 90 minutes on 2 cores; needs ~24 GiB of
# memory and ~8 GB of disk. Not part of CI.
#
#   BENCH_DIR   where the models and results go (default: bench)
#   BENCH_VENV  the Python environment of the reference (default:
#               ${XDG_CACHE_HOME:-~/.cache}/spiral/benchvenv, made from
#               scripts/bench/requirements.txt when missing, and installed
#               into again after an interrupted install or when the
#               requirements change)
#   THREADS     threads of both sides (default: 2)
set -euo pipefail
cd "$(dirname "$0")/../.."
BENCH_DIR=${BENCH_DIR:-bench}
BENCH_VENV=${BENCH_VENV:-${XDG_CACHE_HOME:-${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache}/spiral/benchvenv}
THREADS=${THREADS:-2}
results=$BENCH_DIR/results
mkdir -p "$results"

# The copy of requirements.txt in it marks an install that finished (an
# interrupted one, or other requirements, install again).
if ! cmp -s scripts/bench/requirements.txt "$BENCH_VENV/requirements.txt"; then
	[[ -x $BENCH_VENV/bin/python ]] || python3 -m venv "$BENCH_VENV"
	"$BENCH_VENV/bin/python" -m pip install --quiet -r scripts/bench/requirements.txt
	cp scripts/bench/requirements.txt "$BENCH_VENV/requirements.txt"
fi
py=$BENCH_VENV/bin/python
for spec in "qwen3-0.6b:0:qwen3-0.6b" "qwen3-0.6b:8:qwen3-0.6b-8l"; do
	IFS=: read -r config layers name <<<"$spec"
	if [[ ! -f $BENCH_DIR/$name/model.onnx ]]; then
		"$py" scripts/bench/make_model.py --config "$config" --layers "$layers" --out "$BENCH_DIR/$name"
	fi
done

env_sh="$(scripts/setup.sh)" # where setup fails, its message is the last
source "$env_sh" >/dev/null
go build -o "$results/spiral" .
spiral=$results/spiral

# name model rows tokens steps
cases=(
	"8l-1x2048 qwen3-0.6b-8l 1 2048 3"
	"0.6b-1x2048 qwen3-0.6b 1 2048 2"
	"0.6b-4x2048 qwen3-0.6b 4 2048 1"
	"0.6b-1x9216 qwen3-0.6b 1 9216 1"
)
for c in "${cases[@]}"; do
	read -r name m rows tokens steps <<<"$c"
	echo "bench-scale: spiral $name" >&2
	"$spiral" bench train --threads "$THREADS" --model "$BENCH_DIR/$m/model.onnx" --rows "$rows" --tokens "$tokens" --steps "$steps" >"$results/spiral-$name.jsonl"
	"$spiral" plan --json --model "$BENCH_DIR/$m/model.onnx" --rows "$rows" --tokens "$tokens" >"$results/plan-$name.json"
	if [[ $name != 0.6b-4x2048 && $name != 0.6b-1x9216 ]]; then # PyTorch is killed past 24 GiB on these
		echo "bench-scale: torch $name" >&2
		"$py" scripts/bench/torch_train_step.py --model "$BENCH_DIR/$m" --rows "$rows" --tokens "$tokens" --steps "$steps" \
			--threads "$THREADS" --checkpointing >"$results/torch-$name.jsonl"
	fi
done
echo "bench-scale: spiral generate 0.6b-64x1000" >&2
"$spiral" bench generate --threads "$THREADS" --model "$BENCH_DIR/qwen3-0.6b/model.onnx" --rows 64 --prompt-tokens 1000 --new-tokens 16 --steps 1 \
	>"$results/spiral-gen-0.6b-64x1000.jsonl"
"$spiral" plan --json --model "$BENCH_DIR/qwen3-0.6b/model.onnx" --gen-rows 64 --gen-capacity 1016 >"$results/plan-gen-0.6b-64x1000.json"
python3 scripts/bench/table.py "$results"
