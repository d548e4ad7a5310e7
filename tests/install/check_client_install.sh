#!/usr/bin/env bash
# The installed C++ client works for a program outside the tree (ctest entry
# install/client_package; tests/install/CMakeLists.txt passes the arguments):
#  1. `cmake --install BUILD --prefix P --component client` installs exactly
#     the client package (header, zkfleet.pb.h, four static libraries, the
#     CMake package, zkfleet-client.pc): no program, test or benchmark;
#  2. clients/cpp/examples/out_of_tree configures with only P on
#     CMAKE_PREFIX_PATH (find_package(zkfleet) must come from P), builds;
#  3. the same source compiles with `pkg-config --cflags zkfleet-client` and
#     links with `pkg-config --libs --static zkfleet-client`, and with plain
#     --libs; again after P is moved elsewhere (the .pc is relocatable);
#  4. each program runs: --help exits 0; asked for the status of a broker
#     that is not there (an ipc:// path nobody binds) it ends in TIMEOUT
#     (exit 3), having set up ZeroMQ and serialized a request.
# Exits 77 (ctest: skipped) with the reason when given --skip-reason.
set -euo pipefail

skip_reason=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$2 ;;
    --source-dir) src=$2 ;;
    --work-dir) work=$2 ;;
    --cmake) cmake=$2 ;;
    --generator) generator=$2 ;;
    --make-program) make_program=$2 ;;
    --cxx) cxx=$2 ;;
    --libdir) libdir=$2 ;;
    --includedir) includedir=$2 ;;
    --pkg-config) pkg_config=$2 ;;
    --skip-reason) skip_reason=$2 ;;
    *) echo "check_client_install.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done

if [ -n "$skip_reason" ]; then
  # GoogleTest's layout, which scripts/test.sh's list of skip reasons reads.
  printf 'tests/install/check_client_install.sh: Skipped\n%s\n' "$skip_reason"
  exit 77
fi

step() { echo "=== $*"; }
fail() { echo "FAILED: $*" >&2; exit 1; }

example="$src/clients/cpp/examples/out_of_tree"
prefix="$work/prefix"
rm -rf "$work"
mkdir -p "$work"

step "1. cmake --install $build --prefix $prefix --component client"
"$cmake" --install "$build" --prefix "$prefix" --component client ||
  fail "cmake --install of the client component (is the build complete?)"
[ -d "$prefix" ] || fail "the client component installed nothing: no install rules for it in this build"
expected="$(sort <<EOF
$includedir/zkfleet.pb.h
$includedir/zkfleet/client.h
$libdir/cmake/zkfleet/zkfleetConfig.cmake
$libdir/cmake/zkfleet/zkfleetConfigVersion.cmake
$libdir/cmake/zkfleet/zkfleetTargets.cmake
$libdir/cmake/zkfleet/zkfleetTargets-release.cmake
$libdir/libzkfleet_client.a
$libdir/libzkfleet_common.a
$libdir/libzkfleet_fleet.a
$libdir/libzkfleet_schema.a
$libdir/libzkfleet_wire.a
$libdir/pkgconfig/zkfleet-client.pc
EOF
)"
# The per-configuration targets file is named after the build type.
installed="$(cd "$prefix" && find . -type f -o -type l | sed 's|^\./||' |
  sed -E 's|zkfleetTargets-[a-z]+\.cmake$|zkfleetTargets-release.cmake|' | sort)"
if [ "$installed" != "$expected" ]; then
  diff <(echo "$expected") <(echo "$installed") | sed 's/^/  /' >&2 || true
  fail "the client component installs other files than the package's (< expected, > installed)"
fi
echo "installed: $(echo "$installed" | wc -l) files, as expected"

step "2. CMake package: configure and build $example with CMAKE_PREFIX_PATH=$prefix"
"$cmake" -S "$example" -B "$work/cmake-consumer" -G "$generator" -DCMAKE_MAKE_PROGRAM="$make_program" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF || fail "configuring the out-of-tree consumer (find_package(zkfleet))"
found="$(sed -n 's/^zkfleet_DIR:[A-Z]*=//p' "$work/cmake-consumer/CMakeCache.txt")"
[ "$found" = "$prefix/$libdir/cmake/zkfleet" ] || fail "find_package(zkfleet) found '$found', not the install in $prefix"
"$cmake" --build "$work/cmake-consumer" || fail "building the out-of-tree consumer against zkfleet::client"

step "3. pkg-config: compile and link $example/broker_status.cc"
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
command -v "$pkg_config" >/dev/null || fail "no pkg-config program ($pkg_config)"
[ "$("$pkg_config" --variable=pcfiledir zkfleet-client)" = "$prefix/$libdir/pkgconfig" ] ||
  fail "pkg-config finds zkfleet-client elsewhere than $prefix/$libdir/pkgconfig"
cflags="$("$pkg_config" --cflags zkfleet-client)" || fail "pkg-config --cflags zkfleet-client"
static_libs="$("$pkg_config" --libs --static zkfleet-client)" || fail "pkg-config --libs --static zkfleet-client"
libs="$("$pkg_config" --libs zkfleet-client)" || fail "pkg-config --libs zkfleet-client"
echo "cflags: $cflags"
echo "libs --static: $static_libs"
mkdir -p "$work/pc"
# shellcheck disable=SC2086  # the flags are words
"$cxx" -std=c++17 $cflags -c "$example/broker_status.cc" -o "$work/pc/broker_status.o" ||
  fail "compiling with pkg-config --cflags zkfleet-client"
# shellcheck disable=SC2086
"$cxx" "$work/pc/broker_status.o" -o "$work/pc/broker_status" $static_libs ||
  fail "linking with pkg-config --libs --static zkfleet-client"
# shellcheck disable=SC2086
"$cxx" "$work/pc/broker_status.o" -o "$work/pc/broker_status_plain" $libs ||
  fail "linking with pkg-config --libs zkfleet-client"
mv "$prefix" "$work/moved-prefix"
export PKG_CONFIG_PATH="$work/moved-prefix/$libdir/pkgconfig${PKG_CONFIG_PATH#"$prefix/$libdir/pkgconfig"}"
moved_libs="$("$pkg_config" --libs --static zkfleet-client)"
case "$moved_libs" in *"$work/moved-prefix/"*) ;; *) fail "zkfleet-client.pc does not follow a moved prefix: $moved_libs" ;; esac
# shellcheck disable=SC2086
"$cxx" "$work/pc/broker_status.o" -o "$work/pc/broker_status_moved" $moved_libs ||
  fail "linking with pkg-config --libs --static zkfleet-client after moving the prefix"

step "4. run the programs"
# A socket path nobody binds, short enough for sun_path wherever the build is.
sockdir="$(mktemp -d /tmp/zkfleet-install-test.XXXXXX)"
trap 'rm -rf "$sockdir"' EXIT
for program in "$work/cmake-consumer/broker_status" "$work/pc/broker_status" "$work/pc/broker_status_plain" \
               "$work/pc/broker_status_moved"; do
  out="$(timeout 60 "$program" --help 2>&1)" || fail "$program --help exited $?: $out"
  case "$out" in *"usage: broker_status"*) ;; *) fail "$program --help printed: $out" ;; esac
  rc=0
  out="$(timeout 60 "$program" "ipc://$sockdir/no-broker.sock" 2>&1)" || rc=$?
  [ $rc -eq 3 ] || fail "$program without a broker exited $rc (expected 3, TIMEOUT): $out"
  case "$out" in TIMEOUT:*) ;; *) fail "$program without a broker printed: $out" ;; esac
  echo "$program: --help OK; no broker: $out"
done
echo "install/client_package: PASSED"
