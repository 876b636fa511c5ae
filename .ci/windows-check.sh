#!/usr/bin/env bash
# Build and test the Rust crate in the current directory for Windows (x86_64-pc-windows-gnu)
# on a Debian bookworm machine, and run the tests under Wine.
#
# A copy of the workplace's ../shared/tools/windows-check.sh, kept in the repository so that
# CI (.ci/run), which sees only a clone, can run it.
#
# Usage, from the project root:   .ci/windows-check.sh [extra cargo test args]
#   e.g. .ci/windows-check.sh --release --test protocol
# Env:  WIN_WORK  scratch dir for the cargo home, target dir and wine prefix
#                 (default: ./target/windows-check; keep it ignored by git)
#       WIN_MODE  "test" (default) runs `cargo test` under Wine; "check" only type-checks.
#
# How it works: rustup here has no Windows std and cannot download one. Debian ships
# rustc-web 1.96 with its std sources (rust-web-src), so we build std for the Windows
# target from source (-Zbuild-std, allowed on stable by RUSTC_BOOTSTRAP=1), link with
# mingw-w64 and run the .exe files with wine64. Wine 8 lacks bcryptprimitives.dll
# (ProcessPrng, used by Rust std since 1.78): a 10-line stand-in DLL forwards it to
# RtlGenRandom. A cold run takes a few minutes on 2 cores; later runs are incremental.
set -euo pipefail
W=${WIN_WORK:-$PWD/target/windows-check}
MODE=${WIN_MODE:-test}
mkdir -p "$W"

need=()
for p in rustc-web cargo-web rust-web-src gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64 wine64; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"
fi

# Debian's 1.96 toolchain, called by absolute path (rustup's cargo stays first in PATH).
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1
export CARGO_HOME=$W/cargo-home CARGO_TARGET_DIR=$W/target
export WINEPREFIX=$W/wineprefix WINEDEBUG=-all
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=/usr/lib/wine/wine64
XC=(-Zbuild-std=std,panic_abort --target x86_64-pc-windows-gnu)

if [ "$MODE" = check ]; then
  exec /usr/bin/cargo check --all-targets "${XC[@]}"
fi

if [ ! -f "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" ]; then
  mkdir -p "$W/shim"
  cat > "$W/shim/bcryptprimitives.c" <<'C'
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buf, ULONG len); /* RtlGenRandom (advapi32) */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len) {
        ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, n)) return FALSE;
        data += n; len -= n;
    }
    return TRUE;
}
C
  x86_64-w64-mingw32-gcc -O2 -shared -s -o "$W/shim/bcryptprimitives.dll" "$W/shim/bcryptprimitives.c" -ladvapi32
  /usr/lib/wine/wine64 wineboot -i >/dev/null 2>&1 || true   # complains about 32-bit wine; harmless
  cp "$W/shim/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/"
fi

status=0
/usr/bin/cargo test "${XC[@]}" "$@" || status=$?
/usr/lib/wine/wineserver64 -k >/dev/null 2>&1 || true   # stop this prefix's wineserver
exit $status
