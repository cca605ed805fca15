#!/usr/bin/env bash
# ops.sh: where a generation call's time goes, operator type by operator
# type (scripts/bench/ops.py under ONNX Runtime's profiler, the same
# release as spiral's library), on a model's sampling graph with a full
# KV cache. A measurement aid, not part of CI.
#
#   scripts/bench/ops.sh [MODEL] -- [ops.py flags]
#   scripts/bench/ops.sh -- --rows 64 --capacity 600          # embedded
#   scripts/bench/ops.sh q4/model.onnx -- --rows 16 --capacity 1000
#   GRAPH=decode.onnx scripts/bench/ops.sh -- --rows 64 --capacity 600
#
# Its Python environment also runs scripts/bench/attention.py (one
# attention layer's decode step as the exports write it, against ONNX
# Runtime's GroupQueryAttention with the cache updated in place).
#
#   OPS_VENV  the Python environment (default:
#             ${XDG_CACHE_HOME:-~/.cache}/spiral/opsvenv, made when missing)
#   OUT       where the artifacts go (default: a temporary directory)
#   GRAPH     the graph profiled: sample.onnx (default; prefill, and
#             decode where there is no decode graph) or decode.onnx
set -euo pipefail
cd "$(dirname "$0")/../.."
model=()
if [[ ${1:-} != -- && -n ${1:-} ]]; then
	model=(--model "$1")
	shift
fi
[[ ${1:-} == -- ]] && shift
OPS_VENV=${OPS_VENV:-${XDG_CACHE_HOME:-${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache}/spiral/opsvenv}
OUT=${OUT:-$(mktemp -d)}
env_sh="$(scripts/setup.sh)" # where setup fails, its message is the last
source "$env_sh" >/dev/null
go build -o "$OUT/spiral" .
ort_version=$("$OUT/spiral" version | awk '$1 == "onnxruntime" { print $2 }')
if [[ ! -x $OPS_VENV/bin/python ]] || ! "$OPS_VENV/bin/python" -c "import onnxruntime as o; assert o.__version__ == '$ort_version'" 2>/dev/null; then
	rm -rf "$OPS_VENV"
	python3 -m venv "$OPS_VENV"
	"$OPS_VENV/bin/pip" install --quiet --disable-pip-version-check "onnxruntime==$ort_version" "numpy==2.4.6" "onnx==1.23.2"
fi
"$OUT/spiral" artifacts "${model[@]}" --out "$OUT/artifacts" >/dev/null
GRAPH=${GRAPH:-sample.onnx}
[[ -f $OUT/artifacts/$GRAPH ]] || { echo "ops.sh: $OUT/artifacts has no $GRAPH (spiral artifacts says why)" >&2; exit 2; }
"$OPS_VENV/bin/python" scripts/bench/ops.py --graph "$OUT/artifacts/$GRAPH" "$@"
