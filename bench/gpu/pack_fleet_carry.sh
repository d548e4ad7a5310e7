#!/usr/bin/env bash
# Builds the fleet binaries with the CUDA backend (sm_90: H100/H200) and packs
# them, with the shared libraries they need that the GPU machine's image
# (Ubuntu 24.04, CUDA driver only) lacks, for bench/gpu/fleet_gpu_bench.sh:
#
#   bench/gpu/pack_fleet_carry.sh [OUT_DIR]      (default OUT_DIR: <repo>/.carry/gpu-fleet)
#
# writes OUT_DIR/bin.tar.xz  stripped zkbroker zkworker zkctl zkfleet-dev zkverify zkprove
#                            (+ EXTRA_TARGETS), and this machine's nginx (/usr/sbin/nginx) and
#                            openssl (/usr/bin/openssl) for the witnesses-by-reference runs
#                            (WITNESS=ref: the bench serves the witnesses with that nginx, its
#                            own config with the types inline: no /etc/nginx, no mime.types;
#                            FETCH_SCHEME=https: its test CA made with that openssl)
#        OUT_DIR/lib.tar.xz  libzmq, libsodium, libpgm, libnorm, libbsd, libmd, the krb5/gssapi
#                            stack, libprotobuf, prometheus-cpp core/pull, civetweb(-cpp),
#                            spdlog, fmt, lmdb, xxhash; libcurl and OpenSSL (libssl, libcrypto)
#                            with what they and nginx load: nghttp2, rtmp, ssh2, psl, brotli,
#                            idn2, unistring, ldap/lber, sasl2, gnutls, hogweed, nettle, gmp,
#                            p11-kit, tasn1, ffi, zstd, crypt: whatever `ldd` lists of those
#                            for the binaries, nginx, openssl and this machine's libcurl.so.4
#                            (swept even where no carried binary links libcurl yet)
#        OUT_DIR/MANIFEST    commit, date, nvcc version, file list and sizes
# xz, not gzip: the two CUDA binaries (zkworker, zkprove) are ~24 MB each, mostly
# the same device code; gzip's 32 KiB window packs them to ~42 MB, xz to ~21 MB.
# (fleet_gpu_bench.sh unpacks with tar, or python3's tarfile where xz is missing.)
# Never carried: libc, libm, libstdc++, libgcc_s, ld-linux, libcuda (the image has
# newer ones, and libcuda must match the driver there).
#
# The repository built is the one the current directory is in (any worktree;
# else the one holding this script). Environment:
#   BUILD_DIR   build tree (default <repo>/build/gpu-fleet; an existing one is reused)
#   CUDA_ARCH   CMAKE_CUDA_ARCHITECTURES (default 90)
#   JOBS        build parallelism (default 2)
#   SKIP_BUILD  1: only pack what BUILD_DIR already holds
#   MAX_MB      fail if the two archives together exceed this (default 40; a carry's limit is 64 MiB)
#   EXTRA_TARGETS  more targets to build and carry (e.g. a fetch benchmark tool; found by name in BUILD_DIR)
#   NGINX [/usr/sbin/nginx]  OPENSSL [/usr/bin/openssl]  (NO_TOOLS=1: carry neither)
set -euo pipefail
SCRIPT_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ROOT=$(git rev-parse --show-toplevel 2>/dev/null || true)
if [[ -z "$ROOT" || ! -f "$ROOT/CMakePresets.json" || ! -d "$ROOT/bench/gpu" ]]; then ROOT=$SCRIPT_ROOT; fi
OUT_DIR=${1:-$ROOT/.carry/gpu-fleet}
BUILD_DIR=${BUILD_DIR:-$ROOT/build/gpu-fleet}
CUDA_ARCH=${CUDA_ARCH:-90}
JOBS=${JOBS:-2}
MAX_MB=${MAX_MB:-40}
TARGETS=(zkbroker zkworker zkctl zkfleet-dev zkverify zkprove)
read -r -a EXTRA <<<"${EXTRA_TARGETS:-}"
NGINX=${NGINX:-/usr/sbin/nginx}
OPENSSL=${OPENSSL:-$(command -v openssl || echo /usr/bin/openssl)}
TOOLS=()
if [[ "${NO_TOOLS:-0}" != 1 ]]; then
  for t in "$NGINX" "$OPENSSL"; do
    [[ -x "$t" ]] || { echo "pack_fleet_carry: $t missing (apt-get install nginx-light openssl, or NGINX=/OPENSSL=, or NO_TOOLS=1)" >&2; exit 1; }
    TOOLS+=("$t")
  done
fi
# libcurl as the fetcher links it (OpenSSL flavour): its dependencies are swept too.
LIBCURL=$(ldconfig -p 2>/dev/null | awk '$1 == "libcurl.so.4" && $NF ~ /^\// {print $NF; exit}')
# Shared libraries to carry (basename prefixes as ldd prints them).
CARRY_LIBS='^lib(zmq|sodium|pgm|norm|bsd|md|gssapi_krb5|krb5|k5crypto|krb5support|com_err|keyutils|protobuf|prometheus-cpp-(core|pull)|civetweb|civetweb-cpp|spdlog|fmt|lmdb|xxhash'
# ... and the fetcher's (libcurl, OpenSSL) and nginx's: the GPU image may have none of them, or
# other sonames (Ubuntu 24.04: libunistring.so.5, not .so.2).
CARRY_LIBS+='|curl|ssl|crypto|crypt|nghttp2|rtmp|ssh2|psl|brotli(common|dec|enc)|idn2|unistring|ldap|lber|sasl2|gnutls|hogweed|nettle|gmp|p11-kit|tasn1|ffi|zstd'
# ... and the broker's gRPC front door (issue 32) with what gRPC links: abseil, re2, c-ares, upb.
CARRY_LIBS+='|grpc|grpc\+\+|grpc\+\+_reflection|gpr|upb|address_sorting|cares|re2|absl_[a-z0-9_]+)(-[0-9.]+)?\.so'
# Libraries the GPU image has (or must come from its driver): never carried. The name must end
# there ("libc" is not "libcurl", "libz" not "libzstd"), so anything else is reported.
SYSTEM_LIBS='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcuda|libz|libresolv|libselinux|libpcre2)([-.]|$)'
say() { echo "[pack $(date +%T)] $*"; }
is_cuda_build() {  # CUDA enabled and the CUDA backend compiled in
  compgen -G "$BUILD_DIR/CMakeFiles/*/CMakeCUDACompiler.cmake" >/dev/null &&
    { [[ ! -f "$BUILD_DIR/build.ninja" ]] || grep -q 'ZKFLEET_HAVE_CUDA=1' "$BUILD_DIR/build.ninja"; }
}

say "repository $ROOT ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 'no git')), build $BUILD_DIR, out $OUT_DIR"
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  [[ -x /usr/local/cuda/bin/nvcc || -n "${CUDACXX:-}" ]] || command -v nvcc >/dev/null || {
    echo "pack_fleet_carry: no nvcc (/usr/local/cuda/bin/nvcc, \$CUDACXX or PATH)" >&2; exit 1; }
  say "configure (release preset, ZKFLEET_CUDA=ON, CUDA arch $CUDA_ARCH, no tests, no bench)"
  (cd "$ROOT" && cmake --preset release -B "$BUILD_DIR" -DZKFLEET_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" \
    -DZKFLEET_BUILD_TESTS=OFF -DZKFLEET_BUILD_BENCH=OFF >/dev/null)
  is_cuda_build || { echo "pack_fleet_carry: $BUILD_DIR is not a CUDA build (no CUDA compiler, or ZKFLEET_HAVE_CUDA off)" >&2; exit 1; }
  say "build ${TARGETS[*]} (-j$JOBS; nvcc on few cores takes a while)"
  cmake --build "$BUILD_DIR" --target "${TARGETS[@]}" ${EXTRA[@]+"${EXTRA[@]}"} -j"$JOBS"
fi
is_cuda_build || { echo "pack_fleet_carry: $BUILD_DIR is not a CUDA build (no CUDA compiler, or ZKFLEET_HAVE_CUDA off)" >&2; exit 1; }

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/lib" "$OUT_DIR"
for t in "${TARGETS[@]}"; do
  src="$BUILD_DIR/cmd/$t/$t"
  [[ -x "$src" ]] || { echo "pack_fleet_carry: $src missing (build it, or drop SKIP_BUILD)" >&2; exit 1; }
  cp "$src" "$STAGE/bin/$t"
  strip --strip-unneeded "$STAGE/bin/$t"
done
for t in ${EXTRA[@]+"${EXTRA[@]}"}; do
  src=$(find "$BUILD_DIR" -name "$t" -type f -perm -u+x -not -path '*/CMakeFiles/*' | head -n 1)
  [[ -n "$src" ]] || { echo "pack_fleet_carry: EXTRA_TARGETS: no executable $t in $BUILD_DIR" >&2; exit 1; }
  cp "$src" "$STAGE/bin/$t"
  strip --strip-unneeded "$STAGE/bin/$t"
done
for t in ${TOOLS[@]+"${TOOLS[@]}"}; do cp -L "$t" "$STAGE/bin/$(basename "$t")"; done
# The libraries: every one ldd resolves for any binary, sorted into carried,
# system and unknown (unknown ones are reported: the GPU run would fail on them).
unknown=0
while read -r name path; do
  if [[ "$name" =~ $CARRY_LIBS ]]; then
    cp -L "$path" "$STAGE/lib/$name"
  elif [[ ! "$name" =~ $SYSTEM_LIBS ]]; then
    echo "pack_fleet_carry: WARNING: $name ($path) is neither carried nor known to be on the GPU image" >&2
    unknown=1
  fi
done < <(for b in "$STAGE"/bin/* $LIBCURL; do ldd "$b"; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u)
# libcurl itself, where no carried binary links it yet (a build from before the fetcher).
[[ -z "$LIBCURL" || -e "$STAGE/lib/libcurl.so.4" ]] || cp -L "$LIBCURL" "$STAGE/lib/libcurl.so.4"
if ldd "$STAGE"/bin/* | grep -q "not found"; then
  ldd "$STAGE"/bin/* | grep "not found" >&2; echo "pack_fleet_carry: unresolved libraries" >&2; exit 1
fi
if ldd "$STAGE/bin/zkworker" | grep -q libcudart; then
  echo "pack_fleet_carry: zkworker links libcudart dynamically; carrying it" >&2
  cp -L "$(ldd "$STAGE/bin/zkworker" | awk '/libcudart/ {print $3}')" "$STAGE/lib/"
fi
rm -f "$OUT_DIR"/bin.tar.* "$OUT_DIR"/lib.tar.*
tar -C "$STAGE/bin" -cf - . | xz -9 -T1 >"$OUT_DIR/bin.tar.xz"  # one stream: the CUDA binaries share their device code
tar -C "$STAGE/lib" -cf - . | xz -9 -T"$JOBS" >"$OUT_DIR/lib.tar.xz"
{
  echo "zkfleet GPU fleet carry, $(date -u +%FT%TZ)"
  echo "commit $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (+ uncommitted changes)')"
  echo "build $BUILD_DIR, CMAKE_CUDA_ARCHITECTURES=$(awk -F= '/^CMAKE_CUDA_ARCHITECTURES:/ {print $2}' "$BUILD_DIR/CMakeCache.txt" | grep . || echo "default (90-real 90-virtual)")"
  echo "$(/usr/local/cuda/bin/nvcc --version 2>/dev/null | tail -n 1)"
  (cd "$STAGE" && ls -l bin lib | awk 'NF >= 9 {print $5, $9}')
} >"$OUT_DIR/MANIFEST"
echo "$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)" >"$OUT_DIR/COMMIT"
total=$(( $(stat -c %s "$OUT_DIR/bin.tar.xz") + $(stat -c %s "$OUT_DIR/lib.tar.xz") ))
say "binaries: $(cd "$STAGE/bin" && ls | tr '\n' ' ')"
say "libraries: $(cd "$STAGE/lib" && ls | tr '\n' ' ')"
# The fetcher's and nginx's libraries, one by one: carried, or left to the GPU image (system).
fetch_libs=""
for l in libcurl.so.4 libssl.so.3 libcrypto.so.3 libnghttp2 librtmp libssh2 libpsl libbrotlidec libbrotlicommon libidn2 \
         libunistring libldap liblber libsasl2 libgssapi_krb5 libgnutls libzstd libcrypt.so libpcre2-8 libz.so; do
  if compgen -G "$STAGE/lib/$l*" >/dev/null; then fetch_libs+="$l carried; "; else fetch_libs+="$l NOT carried; "; fi
done
say "fetch/nginx libraries: $fetch_libs"
echo "fetch/nginx libraries: $fetch_libs" >>"$OUT_DIR/MANIFEST"
say "$OUT_DIR: bin.tar.xz $(stat -c %s "$OUT_DIR/bin.tar.xz") B, lib.tar.xz $(stat -c %s "$OUT_DIR/lib.tar.xz") B, total $((total / 1000000)) MB ($(awk -v b="$total" 'BEGIN { printf "%.1f", b / 1048576 }') MiB; the whole carry dir: $(du -sb "$OUT_DIR" | cut -f1) B)"
if (( total > MAX_MB * 1000000 )); then echo "pack_fleet_carry: $((total / 1000000)) MB is over MAX_MB=$MAX_MB" >&2; exit 1; fi
if (( $(du -sb "$OUT_DIR" | cut -f1) >= 64 << 20 )); then echo "pack_fleet_carry: $OUT_DIR is 64 MiB or more: too big for one carry" >&2; exit 1; fi
(( unknown == 0 )) || say "WARNING: some libraries are neither carried nor known system ones (see above)"
say "carry it: run(..., carry=[\"${OUT_DIR#$ROOT/}\"]) then bash bench/gpu/fleet_gpu_bench.sh there"
