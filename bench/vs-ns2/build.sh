#!/usr/bin/env bash
# Build ns-2.35 with the MQ-ECN authors' code (HKUST-SING/MQ-ECN-NS2) outside the repository.
#
#   bench/vs-ns2/build.sh            # idempotent: does only what is missing
#   FORCE=1 bench/vs-ns2/build.sh    # re-extract and rebuild ns-2 (keeps the downloads)
#
# Where things go ($VS_NS2_CACHE, default /var/cache/ecnlab-vs-ns2 as root, else $XDG_CACHE_HOME/ecnlab-vs-ns2):
#   src/ns2_2.35+dfsg.orig.tar.xz     Debian's orig tarball of ns-2.35 (`apt-get source --download-only ns2`)
#   src/MQ-ECN-NS2/                   the authors' repository (a snapshot; see MQECN_SRC below)
#   deps/{include,lib,bin}            symlinks to Debian's Tcl/Tk/OTcl/TclCL, laid out as ns-2's configure expects
#   build/ns-allinone-2.35/ns-2.35/   the patched tree; its `ns` binary is the simulator
#   scripts/                          the authors' scripts/ (tcl, CDFs, result.py), untouched
#
# What is changed in ns-2.35, and nothing else:
#   1. the authors' mqecn.patch (patch -p1 --ignore-whitespace from ns-allinone-2.35, as their README says),
#      their queue/{dwrr,wrr}.{cc,h} copied into ns-2.35/queue/ and queue/wrr.o queue/dwrr.o added to OBJ_CC;
#   2. toolchain fixes (ours): g++ 12 needs -std=gnu++98 -fpermissive; Tcl 8.6 hides interp->result unless
#      USE_INTERP_RESULT; Debian's libtclcl is built without HAVE_INT64, so TclObject::bind(const char*, int64_t*)
#      (and its delay_bind twin) are declared but not defined in it: ns-2.35 gets definitions of its own
#      (common/tclcl-int64-bind.cc, written by this script) on TclCL's InstVar, as TclCL does for int.
#
# MQECN_SRC: a directory or bare git dir holding the authors' repository. Default: a git clone of
# https://github.com/HKUST-SING/MQ-ECN-NS2 if that works, else the snapshot at
# /work/.mirror/HKUST-SING+MQ-ECN-NS2/repo if present.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ -z "${VS_NS2_CACHE:-}" ]]; then
    if [[ "$(id -u)" == 0 ]]; then VS_NS2_CACHE=/var/cache/ecnlab-vs-ns2
    else VS_NS2_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/ecnlab-vs-ns2"; fi
fi
CACHE="$VS_NS2_CACHE"
SRC="$CACHE/src"
DEPS="$CACHE/deps"
TOP="$CACHE/build/ns-allinone-2.35"
NS="$TOP/ns-2.35"
JOBS="${JOBS:-1}"   # the machine is shared: one compiler at a time unless told otherwise
log() { echo "[vs-ns2 build] $*" >&2; }
SUDO=""; [[ "$(id -u)" == 0 ]] || SUDO="sudo"

if [[ -x "$NS/ns" && "${FORCE:-0}" != 1 ]]; then
    log "$NS/ns exists (FORCE=1 rebuilds)"
    echo "$NS/ns"
    exit 0
fi
mkdir -p "$SRC" "$DEPS"

# ---------------------------------------------------------------- apt dependencies ---
PKGS=(build-essential tcl-dev tk-dev libotcl1-dev tclcl libtclcl1-dev libpcap0.8-dev libxt-dev libxext-dev libnsl-dev xz-utils patch)
missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if (( ${#missing[@]} )); then
    log "apt-get install ${missing[*]}"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi

# ------------------------------------------------------- ns-2.35 from Debian sources ---
ORIG="$(ls "$SRC"/ns2_2.35*.orig.tar.* 2>/dev/null | head -n1 || true)"
if [[ -z "$ORIG" ]]; then
    if ! apt-get source --print-uris ns2 >/dev/null 2>&1; then
        SRCLIST=/etc/apt/sources.list.d/ecnlab-vs-ns2-src.sources
        log "no deb-src for ns2: adding $SRCLIST (bookworm main) and running apt-get update"
        $SUDO tee "$SRCLIST" >/dev/null <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
        $SUDO apt-get update -q
    fi
    log "apt-get source --download-only ns2 (only the orig tarball is used; Debian's patch set is not)"
    # The debian.tar.xz may 404 on a snapshot mirror; the orig tarball is all we need.
    (cd "$SRC" && apt-get source --download-only ns2) || true
    ORIG="$(ls "$SRC"/ns2_2.35*.orig.tar.* 2>/dev/null | head -n1 || true)"
    [[ -n "$ORIG" ]] || { log "error: could not download ns-2.35's orig tarball"; exit 1; }
fi
log "ns-2.35 source: $ORIG"

# ----------------------------------------------------------- the authors' repository ---
AUTH="$SRC/MQ-ECN-NS2"
if [[ ! -f "$AUTH/mqecn.patch" ]]; then
    rm -rf "$AUTH"
    M="${MQECN_SRC:-}"
    if [[ -z "$M" ]]; then
        if timeout 120 git clone -q --depth 1 https://github.com/HKUST-SING/MQ-ECN-NS2 "$AUTH" 2>/dev/null; then
            M=cloned
        elif [[ -d /work/.mirror/HKUST-SING+MQ-ECN-NS2/repo ]]; then
            M=/work/.mirror/HKUST-SING+MQ-ECN-NS2/repo
        else
            log "error: cannot get HKUST-SING/MQ-ECN-NS2 (set MQECN_SRC to a checkout or bare git dir)"; exit 1
        fi
    fi
    if [[ "$M" != cloned ]]; then
        mkdir -p "$AUTH"
        if git --git-dir="$M" rev-parse --verify -q HEAD >/dev/null 2>&1 && [[ ! -f "$M/mqecn.patch" ]]; then
            git --git-dir="$M" archive HEAD | tar -x -C "$AUTH"
            git --git-dir="$M" rev-parse HEAD > "$AUTH/.commit"
        else
            cp -a "$M/." "$AUTH/"
        fi
    else
        git -C "$AUTH" rev-parse HEAD > "$AUTH/.commit"
    fi
fi
log "MQ-ECN-NS2: $AUTH (commit $(cat "$AUTH/.commit" 2>/dev/null || echo '?'))"
rm -rf "$CACHE/scripts"; cp -a "$AUTH/scripts" "$CACHE/scripts"

# ---------------------------------- a prefix where configure finds Debian's Tcl stack ---
MA="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)"
mkdir -p "$DEPS/include" "$DEPS/lib" "$DEPS/bin"
# configure insists on Tcl's private tclInt.h (Debian: tcl-private/); the public headers win where names clash.
for h in /usr/include/tcl8.6/tcl-private/unix/*.h /usr/include/tcl8.6/tcl-private/generic/*.h \
         /usr/include/tcl8.6/*.h /usr/include/otcl.h /usr/include/tclcl/*.h; do ln -sfn "$h" "$DEPS/include/"; done
for l in libtcl8.6.so libtk8.6.so libotcl.so libtclcl.so; do ln -sfn "/usr/lib/$MA/$l" "$DEPS/lib/$l"; done
ln -sfn /usr/share/tcltk/tcl8.6 "$DEPS/lib/tcl8.6"
ln -sfn /usr/share/tcltk/tk8.6 "$DEPS/lib/tk8.6"
ln -sfn /usr/bin/tcl2c++ "$DEPS/bin/tcl2c++"

# --------------------------------------------------------------- extract and patch ---
# Extract and patch once (marker .ecnlab-patched); FORCE=1 starts from a fresh tree. A tree that is patched but
# has no ns binary yet (an interrupted or failed make) is built again incrementally.
if [[ "${FORCE:-0}" == 1 || ! -f "$NS/.ecnlab-patched" ]]; then
rm -rf "$TOP"; mkdir -p "$TOP"
log "extracting $ORIG"
tar -xf "$ORIG" -C "$TOP"
[[ -d "$NS" ]] || { log "error: $NS missing after extraction"; exit 1; }
log "applying the authors' mqecn.patch"
(cd "$TOP" && patch -p1 --ignore-whitespace -s -i "$AUTH/mqecn.patch")
cp "$AUTH"/queue/*.cc "$AUTH"/queue/*.h "$NS/queue/"

fi   # (the configure step below re-runs only without config.status)

# Toolchain fix (ours): TclObject::bind for int64_t, absent from Debian's libtclcl (built without HAVE_INT64).
cat > "$NS/common/tclcl-int64-bind.cc" <<'EOF'
// ecnlab bench/vs-ns2 toolchain fix. Debian's libtclcl is compiled without HAVE_INT64, so the two
// 64-bit binders that tclcl.h declares when HAVE_INT64 is defined (as ns-2.35's autoconf.h does),
//   TclObject::bind(const char*, int64_t*) and TclObject::delay_bind(..., int64_t*, TclObject*),
// have no definition in the library. These are definitions of our own. TclCL keeps its InstVar class
// private to Tcl.cc; the declaration below repeats its layout as in TclCL 1.20 (Debian bookworm):
// a virtual destructor, the pure virtuals set() and snget(), then next_, name_, tracedvar_.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"   // ns-2's: autoconf.h (HAVE_INT64) before tclcl.h, as every ns-2 source has it

#ifdef HAVE_INT64
class InstVar {
protected:
	InstVar(const char* name);          // defined in libtclcl
public:
	virtual ~InstVar();                 // defined in libtclcl (its vtable lives there)
	InstVar* next_;
	virtual void set(const char*) = 0;
	virtual const char* snget(char* wrk, int wrklen) = 0;
	void init(const char* var);         // defined in libtclcl
protected:
	const char* name_;
	TracedVar* tracedvar_;
};

namespace {
class InstVarI64 : public InstVar {
public:
	InstVarI64(const char* name, int64_t* val) : InstVar(name), val_(val) {}
	void set(const char* s) { *val_ = (int64_t) strtoll(s, 0, 0); }
	const char* snget(char* wrk, int wrklen) {
		snprintf(wrk, wrklen, "%lld", (long long) *val_);
		return wrk;
	}
private:
	int64_t* val_;
};
}

void TclObject::bind(const char* var, int64_t* val)
{
	create_instvar(var);
	init(new InstVarI64(var, val), var);
}

bool TclObject::delay_bind(const char* varName, const char* localName, const char* thisVarName,
			   int64_t* val, TclObject* tracer)
{
	if (strcmp(varName, thisVarName) != 0)
		return false;
	if (tracer)
		not_a_TracedVar(thisVarName);
	else {
		if (create_framevar(localName) != TCL_OK)
			abort();
		(void) new InstVarI64(localName, val);
	}
	return true;
}
#endif
EOF

# Add the authors' queues and our int64 bind to the object list (their README: "Add queue/wrr.o queue/dwrr.o").
grep -q 'queue/dwrr.o' "$NS/Makefile.in" ||
    sed -i 's@^\(OBJ_CC =[ \t]*\\\)$@\1\n\tqueue/wrr.o queue/dwrr.o common/tclcl-int64-bind.o \\@' "$NS/Makefile.in"
grep -q 'queue/dwrr.o' "$NS/Makefile.in" || { log "error: could not add queue/dwrr.o to Makefile.in"; exit 1; }

# ------------------------------------------------------------------ configure, make ---
FIX="-DUSE_INTERP_RESULT"
touch "$NS/.ecnlab-patched"
if [[ ! -f "$NS/config.status" || ! -f "$NS/Makefile" ]]; then
log "configure (tcl/tk/otcl/tclcl from $DEPS)"
(cd "$NS" && CFLAGS="-O2 $FIX" CXXFLAGS="-O2 -std=gnu++98 -fpermissive $FIX" \
    ./configure --with-tcl="$DEPS" --with-tcl-ver=8.6 --with-tk="$DEPS" --with-tk-ver=8.6 \
        --with-otcl="$DEPS" --with-tclcl="$DEPS" > "$CACHE/configure.log" 2>&1) \
    || { log "configure failed; see $CACHE/configure.log"; tail -n 20 "$CACHE/configure.log" >&2; exit 1; }
fi
log "make -j$JOBS (a few minutes; log: $CACHE/make.log)"
# ns-2's Makefile ignores configure's CFLAGS (CCOPT has no -O) but appends to an exported CFLAGS; the C++
# dialect goes on the C++ compiler ($(CPP) in that Makefile) so the C files do not see it.
(cd "$NS" && CFLAGS="-O2 $FIX" make -j"$JOBS" CPP="g++ -std=gnu++98 -fpermissive" ns > "$CACHE/make.log" 2>&1) \
    || { log "make failed; see $CACHE/make.log"; grep -E 'error|Error' "$CACHE/make.log" | head -n 20 >&2; exit 1; }
[[ -x "$NS/ns" ]] || { log "error: no ns binary"; exit 1; }
log "done: $NS/ns"
echo "$NS/ns"
