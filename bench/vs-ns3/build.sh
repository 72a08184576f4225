#!/usr/bin/env bash
# Build the ns-3.44 DCTCP benchmark against the prebuilt `ns3` wheel from PyPI.
#
# The wheel (ns3==3.44.post0, manylinux_2_28) ships, under site-packages/ns3/:
#   include/ns3/*.h          ns-3 public headers (+ a vendored boost/)
#   lib64/libns3.44-*.so     shared libraries (release profile, built with
#                            NS3_LOG_ENABLE/NS3_ASSERT_ENABLE), RUNPATH $ORIGIN
#   lib64/lib{gsl,..}-<hash>.so  auditwheel-bundled dependencies
# Its pkg-config / cmake files point at the build machine's paths, so they are
# not used; we pass -I/-L/-rpath ourselves.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$HERE/.venv"
BUILD="$HERE/build"
NS3_VERSION="${NS3_WHEEL_VERSION:-3.44.post0}"
PY="${PYTHON:-python3}"

if [[ ! -x "$VENV/bin/python" ]]; then
    echo "[build] creating venv $VENV" >&2
    "$PY" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -m pip show ns3 >/dev/null 2>&1; then
    echo "[build] pip install ns3==$NS3_VERSION (large download, ~300 MB installed)" >&2
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "ns3==$NS3_VERSION"
fi

# Locate the package directory without importing it (importing ns3 starts cppyy).
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')"
NS3_ROOT="$SITE/ns3"
INC="$NS3_ROOT/include"
LIB="$NS3_ROOT/lib64"
[[ -d "$LIB" ]] || LIB="$NS3_ROOT/lib"
if [[ ! -f "$INC/ns3/core-module.h" || ! -f "$LIB/libns3.44-core.so" ]]; then
    echo "[build] error: ns-3.44 headers/libs not found under $NS3_ROOT" >&2
    exit 1
fi

mkdir -p "$BUILD"
OUT="$BUILD/dctcp_8flows"
SRC="$HERE/dctcp_8flows.cc"
if [[ -x "$OUT" && "$OUT" -nt "$SRC" && "$OUT" -nt "$0" && "${FORCE:-0}" != 1 ]]; then
    echo "[build] $OUT is up to date" >&2
    exit 0
fi

# rpath relative to the binary, so the tree can be moved.
REL_LIB="$(realpath --relative-to="$BUILD" "$LIB")"
MODULES=(core network internet point-to-point applications traffic-control stats bridge)
LIBS=()
for m in "${MODULES[@]}"; do LIBS+=("-lns3.44-$m"); done

echo "[build] g++ -O2 $SRC -> $OUT" >&2
# Same preprocessor flags the wheel's libraries were built with (from its
# lib64/cmake/ns3/ns3Targets.cmake), so inline header code matches.
${CXX:-g++} -std=c++20 -O2 -DNDEBUG \
    -DNS3_BUILD_PROFILE_RELEASE -DNS3_LOG_ENABLE -DNS3_ASSERT_ENABLE -D__LINUX__ \
    -I"$INC" \
    "$SRC" -o "$OUT" \
    -L"$LIB" "${LIBS[@]}" -lpthread \
    -Wl,-rpath,"\$ORIGIN/$REL_LIB" -Wl,--allow-shlib-undefined
echo "[build] done: $OUT" >&2
