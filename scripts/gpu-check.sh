#!/usr/bin/env bash
# gpu-check.sh: the checks to run the day a GPU is lent (one H200: its
# first run, 2026-12-04, took under 5 minutes; the benches' caps below add
# up to 1,065 s should every one run to its cap, so leave the session
# that much), needing nothing beyond this repository and what
# scripts/setup.sh installs. It prints what it measures; copy the figures
# into the README.
#
#   1. setup --cuda (the CUDA build of ONNX Runtime and its CUDA
#      libraries) and `spiral version --device cuda`;
#   2. CPU against CUDA: greedy generations on the embedded model and on
#      a random-weight model with Qwen3-0.6B's shape must be the same
#      text, and one training step's NLL and gradient norm the same to
#      2e-3 (TF32, see below);
#   3. spiral bench generate and bench train on the Qwen3-0.6B shape
#      (28 layers, vocabulary 151,936, random weights, made by spiral
#      init-model: no Python needed): a small generation on CPU and CUDA
#      for the ratio, then the paper-sized one and a training step on
#      CUDA, each capped in time;
#   4. a generation released before each training step, as training
#      does, with each session's own device arena and with one shared
#      by all (--shared-arena), for the peaks.
#
# On CUDA, the policy is on the device layer: one copy of the weights on
# the GPU for generation and training, the KV cache in GPU memory, per
# decode call only token ids, masks, cache write indices and the last
# logits crossing (the bench lines' device_copy_bytes); in training the
# gradients are summed and AdamW runs on the GPU (its moments there),
# and the activations stay there, so a step moves only the token inputs,
# the loss's per-position numbers and the embedding's gradient
# (call_copy_bytes). Its CPU twin is what CI proves (model
# TestResidentMatchesHost, TestResidentTrainingMatchesHost,
# TestResidentAccumulateBatches, TestResidentDeviceOptimizer), and step 2
# runs it here first. The CPU-CUDA training comparison takes the second
# step, whose NLL follows the first step's update on each.
#
# It needs what setup installs (Go modules, the tokenizers library, both
# ONNX Runtime builds). The CUDA provider computes MatMuls in TF32 by
# default, so CPU and CUDA may agree only to about 1e-3, not to fp32's
# 1e-6 (measured on an H200: 1e-5); greedy texts of random-weight models
# may part where two logits nearly tie (reported, not failed).
#
#   OUT     where the models and the outputs go (default:
#           /tmp/spiral-gpu-check; the Qwen3-0.6B shape takes 2.4 GB)
#   SPIRAL  a spiral binary built elsewhere: then nothing is installed or
#           built and the Go tests are skipped, for a GPU machine with no
#           Go and no network. Run setup --cuda where there is network and
#           bring $SPIRAL_CACHE_DIR's onnxruntime-1.30.0 and
#           onnxruntime-gpu-1.30.0 folders; where the machine has CUDA 13's
#           runtime, cuBLAS, cuRAND and cuDNN 9 already (a PyTorch cu13x
#           install does), the ONNX Runtime files alone do (about 300 MB,
#           180 MB as xz), with those libraries' folders in
#           LD_LIBRARY_PATH.
#           This is how the README's H200 figures were taken.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/spiral-gpu-check}
mkdir -p "$OUT"
if [[ -z ${SPIRAL:-} ]]; then
	scripts/setup.sh --cuda >/dev/null
	env_sh="$(scripts/setup.sh)" # where setup fails, its message is the last
	source "$env_sh" >/dev/null
	go build -o "$OUT/spiral" .
	SPIRAL=$OUT/spiral
fi
unset ONNXRUNTIME_LIB # --device cuda then takes the CUDA build setup installed
S=$SPIRAL
step() { printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }

step "version"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
"$S" version --device cuda

M=$OUT/qwen3-0.6b
# The benches' policy is Qwen3's tokenizer's ids, as train's on the real
# model (the models here carry the byte tokenizer's 259, whose loss over
# 259 of the 151,936 logits no real run trains).
QWEN3_IDS=151669
[[ -f $M/model.onnx ]] || "$S" init-model --config qwen3-0.6b --tokenizer byte --out "$M" >/dev/null

if command -v go >/dev/null; then
	step "the CPU twin of device-resident generation, and the sampler on it"
	go test -count=1 -run 'TestResident|TestExecutorCallBytes|TestExecutorActivationsStayOnDevice|TestView|TestBindingCPUTwin|TestDeviceTwinIsSealed|TestSamplerResident|TestTrainerCountsDeviceCopies|TestTrainerUpdatesOnDevice|TestSharedArena|TestSamplerReleaseToSharedArena|TestPackedRows' ./model/... ./rollout/ ./rl/
fi

step "CPU against CUDA: greedy generations"
for model in embedded "$M"; do
	args=(--temperature 0 --max-new-tokens 32 --n 4 "Solve x*7+3=38." "Compute 3*4+5.")
	[[ $model != embedded ]] && args=(--model "$model" "${args[@]}")
	"$S" generate --device cpu "${args[@]}" >"$OUT/gen-cpu.txt"
	"$S" generate --device cuda "${args[@]}" >"$OUT/gen-cuda.txt"
	if cmp -s "$OUT/gen-cpu.txt" "$OUT/gen-cuda.txt"; then
		echo "$model: same text"
	else
		echo "$model: the texts part (near-tied logits, or a real difference):"
		diff "$OUT/gen-cpu.txt" "$OUT/gen-cuda.txt" | head -20
	fi
done

step "CPU against CUDA: two training steps (8 layers of the 0.6B shape)"
M8=$OUT/qwen3-0.6b-8l
[[ -f $M8/model.onnx ]] || "$S" init-model --config qwen3-0.6b --layers 8 --tokenizer byte --out "$M8" >/dev/null
# A run past its cap (or failing) is reported and the comparison left
# out; the checks after it still run.
compared=1
for dev in cpu cuda; do
	timeout 90 "$S" bench train --device "$dev" --model "$M8/model.onnx" --vocab-limit "$QWEN3_IDS" --rows 1 --tokens 512 --steps 2 | tail -1 | tee "$OUT/train-$dev.jsonl" ||
		{ echo "stopped after 90 s, or failed: bench train --device $dev; no comparison"; compared=0; }
done
if ((compared)); then
	python3 - "$OUT/train-cpu.jsonl" "$OUT/train-cuda.jsonl" <<'PY'
import json, sys
cpu, cuda = (json.load(open(p)) for p in sys.argv[1:])
for k in ("nll", "grad_norm"):
    rel = abs(cpu[k] - cuda[k]) / max(abs(cpu[k]), 1e-12)
    print(f"{k}: cpu {cpu[k]:.6g} cuda {cuda[k]:.6g} relative difference {rel:.2e}", "ok" if rel <= 2e-3 else "DIFFERENT")
PY
fi

# Each bench is capped (1,065 s in all, with the two training steps of
# check 2), so that a stuck one cannot take the session's device time;
# on CUDA, nvidia-smi samples the device memory in use meanwhile and its
# peak is printed (the device layer's allocations are ONNX Runtime
# arenas: compare with spiral plan's prediction).
bench() { # seconds args...
	local limit=$1
	shift
	local smi=
	if [[ " $* " == *" cuda "* ]] && command -v nvidia-smi >/dev/null; then
		nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$OUT/gpu-mem.csv" &
		smi=$!
	fi
	# The last line of a generation's figures: bench generate ends with
	# the KV cache's release, a line without its rates.
	timeout "$limit" "$S" bench "$@" --vocab-limit "$QWEN3_IDS" | grep -v '"phase":"release"' | tail -1 || echo "stopped after $limit s: $*"
	if [[ -n $smi ]]; then
		kill "$smi" 2>/dev/null || true
		echo "peak device memory in use: $(sort -n "$OUT/gpu-mem.csv" | tail -1) MiB"
	fi
}
step "bench generate, Qwen3-0.6B shape, 8 rows x 256-token prompts + 32 new (CPU and CUDA, for the ratio)"
for dev in cpu cuda; do
	bench 60 generate --device "$dev" --model "$M/model.onnx" --rows 8 --prompt-tokens 256 --new-tokens 32 --steps 1
done
bench 45 generate --device cpu --resident --model "$M/model.onnx" --rows 8 --prompt-tokens 256 --new-tokens 32 --steps 1

step "bench generate, Qwen3-0.6B shape, 64 rows x 1,000-token prompts + 64 new (CUDA; the default call budget, then 16 GiB)"
bench 120 generate --device cuda --model "$M/model.onnx" --rows 64 --prompt-tokens 1000 --new-tokens 64 --steps 1
bench 120 generate --device cuda --model "$M/model.onnx" --rows 64 --prompt-tokens 1000 --new-tokens 64 --steps 1 --gen-call-mib 16384

step "bench train, Qwen3-0.6B shape, 1 x 2,048 tokens, 2 steps (CUDA)"
bench 120 train --device cuda --model "$M/model.onnx" --rows 1 --tokens 2048 --steps 2

step "the same with the device arena grown by what is asked (--cuda-option arena_extend_strategy=kSameAsRequested; compare the peaks)"
bench 120 train --device cuda --cuda-option arena_extend_strategy=kSameAsRequested --model "$M/model.onnx" --rows 1 --tokens 2048 --steps 2

# Training's iteration: a generation, its KV cache released
# (Sampler.Release), then the step. Each session keeps its own arena by
# default, so the cache's memory may stay reserved beside the step's;
# --shared-arena gives every session one arena, where the step takes what
# the cache gave back (the last line's "arena": in use, peak, reserved).
step "a generation (64 x 1,000 + 32) released before each training step (1 x 2,048), as training does: each session's own arena, then one shared (--shared-arena; compare the peaks)"
gen=(--generate-rows 64 --prompt-tokens 1000 --new-tokens 32)
bench 120 train --device cuda "${gen[@]}" --model "$M/model.onnx" --rows 1 --tokens 2048 --steps 2
bench 120 train --device cuda --shared-arena "${gen[@]}" --model "$M/model.onnx" --rows 1 --tokens 2048 --steps 2
