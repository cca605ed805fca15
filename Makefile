# The README's two commands are `make train` (set up, build, run the main job
# on the embedded default) and `make test` (set up, then vet, format check and
# every test). scripts/setup.sh is idempotent and prints the env file that
# holds the cgo flags and library locations; each recipe sources it.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
GOFLAGS_BUILD := -ldflags "-X main.version=$(VERSION)"
# Setup's env file, sourced; where setup fails, the recipe ends with its
# message.
ENV = env_sh="$$(scripts/setup.sh)" && source "$$env_sh"
# HOME from the password database where it is unset or empty (env -i, a
# service manager's job), as scripts/setup.sh takes it: ./spiral looks
# for setup's cache under it (make train, make embedded), and make test's
# engine venv is made there.
ifeq ($(HOME),)
export HOME := $(shell getent passwd "$$(id -u)" | cut -d: -f6)
endif
ENGINE_VENV ?= $(HOME)/.cache/spiral/engine-venv
ARGS ?=

.PHONY: setup setup-cuda build train test test-race engine-venv bench bench-scale bench-arena study vet embedded fuzz

setup:
	@scripts/setup.sh >/dev/null

# A CUDA build of ONNX Runtime with the CUDA libraries it links and cuDNN
# (about 1.2 GB, once; not in CI), for --device cuda.
setup-cuda:
	@scripts/setup.sh --cuda >/dev/null

build:
	@$(ENV) && go build $(GOFLAGS_BUILD) -o spiral .

train: build
	./spiral train $(ARGS)

vet:
	@$(ENV) && go vet ./... && test -z "$$(gofmt -l . | tee /dev/stderr)"

# Python's onnx package is the independent checker of generated graphs in
# tests (they run python3): python3's own where it has one, else the
# engine venv's (pinned in scripts/engine/requirements.txt), first on
# PATH; pip cannot install into a system Python that is externally
# managed (PEP 668: Debian 12, Ubuntu 23.04 and later). -timeout 30m: a
# package's tests (./tests, about 7 minutes on 2 idle cores, three times
# that on loaded ones) fail all at once past go test's default of 10.
test: vet engine-venv
	@$(ENV) && { python3 -c 'import onnx' 2>/dev/null || PATH="$(ENGINE_VENV)/bin:$$PATH"; } && \
		SPIRAL_ENGINE_PYTHON="$(ENGINE_VENV)/bin/python" go test -count=1 -timeout 30m ./...

# The race detector over the code that runs goroutines: the serving-engine
# client's workers and stall watcher, the sampler's rows and the embedded
# engine's sync (rollout, by name), AdamW's parallel update (model/optim)
# and the signal watch (main). About 30 s once built; not in make test,
# whose packages under -race take over 10 minutes on 2 cores.
test-race:
	@$(ENV) && go test -race -count=1 ./model/optim && \
		go test -race -count=1 -run 'OpenAI|Sync|Sampler|Engine|Generate' ./rollout && \
		go test -race -count=1 -run 'TestWatchInterrupts' .

# llama.cpp's OpenAI-compatible server (xllamacpp's prebuilt CPU wheel) for
# tests/engine_llamacpp_test.go, the onnx package where python3 has
# none, and tensorboard for tests/tensorboard_test.go, in their own
# environment; remade when scripts/engine/requirements.txt changes, by one
# make at a time (two clones' make test share it; the others say they wait).
engine-venv:
	@mkdir -p "$$(dirname "$(ENGINE_VENV)")"; exec 9>"$(ENGINE_VENV).lock"; \
	if command -v flock >/dev/null && ! flock -n 9; then \
		echo "make: waiting for another make to finish $(ENGINE_VENV)" >&2; flock 9; fi; \
	cmp -s scripts/engine/requirements.txt "$(ENGINE_VENV)/requirements.txt" || { \
		rm -rf "$(ENGINE_VENV)" && python3 -m venv "$(ENGINE_VENV)" && \
		"$(ENGINE_VENV)/bin/pip" install --quiet --disable-pip-version-check -r scripts/engine/requirements.txt && \
		cp scripts/engine/requirements.txt "$(ENGINE_VENV)/requirements.txt"; }

bench:
	@$(ENV) && go test -run '^$$' -bench . -benchtime 2x ./...

# spiral's training step and generation on the real Qwen3-0.6B config
# beside PyTorch, with spiral plan's predictions (scripts/bench/scale.sh;
# about 90 minutes, 24 GiB, not in CI).
bench-scale:
	scripts/bench/scale.sh

# The CPU's shared arena against each session's own memory on the
# embedded default, side by side (scripts/bench/arena.sh; about 5 minutes).
bench-arena:
	scripts/bench/arena.sh

# GRPO, agg-only and SPIRAL from the embedded default, 3 seeds each, then
# evaluated and compared into runs/study/report (scripts/study.sh).
study:
	scripts/study.sh

# Rebuild the embedded default model: a fresh tiny Qwen3 (3 layers) warm-
# started by SFT on the embedded equation task (half aggregation examples,
# a quarter of which read the candidates; the rest confirm one drawn
# uniformly, so that reading is left for RL to learn), copied into
# model/embedded/assets (then rebuild the binary). About 15 minutes on 2
# otherwise idle CPU cores; interrupted, make embedded again resumes the
# SFT from its last checkpoint (init-model writes the same model again,
# and a finished SFT leaves no checkpoint, so --overwrite starts a new
# one; rm -rf runs/embedded to start over after changing EMBED_STEPS,
# which the resume refuses as another setting). (A search-weighted second stage,
# --aggregate-share 0.2, sharpened the search traces, pass@1 0.53 -> 0.69,
# but taught the aggregator to copy the last candidate, so RSA fell;
# measured when aggregation traces still re-derived x.)
EMBED_STEPS ?= 900
embedded:
	@$(ENV) && go build $(GOFLAGS_BUILD) -o spiral .
	rm -rf runs/embedded/init && ./spiral init-model --out runs/embedded/init --seed 1 --layers 3
	./spiral sft --model runs/embedded/init --out runs/embedded/sft --overwrite --steps $(EMBED_STEPS) --batch 64 --lr 5e-3 --eval-every 300 --eval-problems 128 --seed 1 --aggregate-read-share 0.25
	cp runs/embedded/sft/model.onnx runs/embedded/sft/tokenizer.json runs/embedded/sft/config.json model/embedded/assets/

# Run every fuzz target for FUZZTIME each (FuzzLoadParquet too: under long
# runs a corrupt Parquet page can make parquet-go allocate gigabytes, see
# data/parquet_test.go), minimizing each new input for at most
# FUZZMINIMIZE (go test's default, 60 s, spends a whole FUZZTIME on the
# first input of a target that reads files, a millisecond an input:
# rl's FuzzReadRunCurves ran 5 inputs in 60 s, 14550 with 5 s).
FUZZTIME ?= 30s
FUZZMINIMIZE ?= 5s
FUZZ_TARGETS := ./data:FuzzLastBoxed ./data:FuzzLoadJSONL ./data:FuzzLoadParquet ./data/synth:FuzzParse \
	./grader:FuzzExtract ./grader:FuzzParse ./model/onnx:FuzzDecode ./model/params:FuzzDecode \
	./model/tokenizer:FuzzByteTokenizerRoundTrip ./model/tokenizer:FuzzCharTokenizerRoundTrip \
	./model/tokenizer:FuzzFromBytes ./rl:FuzzSpiralAdvantages ./rollout/report:FuzzReadJSON \
	./rollout:FuzzBodySummary \
	./rollout:FuzzCheckBaseURL \
	./rollout:FuzzRetryAfter ./rollout:FuzzErrorAnswer ./rollout:FuzzComplete \
	./rollout/report:FuzzIntegerTicks \
	./model/qwen3:FuzzParseConfig ./model/memplan:FuzzParseConfig ./model:FuzzParseDevice ./model:FuzzArenaConfig \
	./model:FuzzReadHFConfig \
	./model/checkpoint:FuzzReadState \
	.:FuzzParseLoRA .:FuzzParseByteSize \
	./model/tokenizer:FuzzReadChatTemplate ./data:FuzzIntegerLiteral \
	./rollout/report:FuzzPassAtKEfficiency \
	./rl:FuzzDecodeMetrics ./rl:FuzzReadRunCurves ./rl:FuzzPlotTraining ./rl:FuzzTruncateLog \
	./rl:FuzzMetricsEvent ./rollout/report/tfevents:FuzzDecode
fuzz:
	@$(ENV) && for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$pkg $$fn"; go test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg || exit 1; done
