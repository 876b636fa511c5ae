#!/usr/bin/env bash
# Usage: .ci/python313.sh DIR
# Makes DIR/python3.13: Debian 13's CPython 3.13 with nats.py's new client (`nats-core`) and
# `nkeys` on its path, for tests/official_clients.rs (BEAVER_PYTHON_CORE). nats-core needs
# Python 3.13 (asyncio.QueueShutDown); Debian 12, which CI runs, has 3.11. Nothing is
# installed system-wide: Debian 13's packages are downloaded with a private apt state and
# unpacked into DIR, and the interpreter runs with Debian 13's own C library (the system's
# is older), through its dynamic loader. Idempotent: a complete DIR is left as it is.
set -euo pipefail
dir=$(mkdir -p "$1" && cd "$1" && pwd)
[ -x "$dir/python3.13" ] && "$dir/python3.13" -c "import nats.client, nkeys" 2>/dev/null && exit 0
apt_dir="$dir/apt"
mkdir -p "$apt_dir/etc/apt/sources.list.d" "$apt_dir/etc/apt/preferences.d" \
  "$apt_dir/lists/partial" "$apt_dir/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
  > "$apt_dir/etc/apt/sources.list"
: > "$apt_dir/status"
apt=(-o "Dir::Etc=$apt_dir/etc/apt" -o "Dir::State::Lists=$apt_dir/lists"
     -o "Dir::State::status=$apt_dir/status" -o "Dir::Cache::Archives=$apt_dir/archives"
     -o "Dir::Cache=$apt_dir" -o APT::Architecture=amd64 -o Debug::NoLocking=1)
apt-get "${apt[@]}" update -q
# With an empty status file apt resolves every dependency, the C library included.
apt-get "${apt[@]}" install -y -q --download-only --no-install-recommends python3.13
rm -rf "$dir/root"
for deb in "$apt_dir"/archives/*.deb; do dpkg -x "$deb" "$dir/root"; done
cat > "$dir/python3.13" <<'WRAPPER'
#!/bin/sh
# Debian 13's CPython 3.13 with its own C library, and nats-core on its path.
d=$(dirname "$(readlink -f "$0")")
export PYTHONHOME="$d/root/usr" PYTHONPATH="$d/site"
lib="$d/root/usr/lib/x86_64-linux-gnu"
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$d/root/usr/bin/python3.13" "$@"
WRAPPER
chmod +x "$dir/python3.13"
# The packages, for Python 3.13, installed by a current pip run with the system's Python (the
# private interpreter cannot start the subprocesses a source build needs). nkeys has no
# wheel on PyPI: build its (pure Python) wheel first.
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
py=python3
if ! python3 -m pip --version >/dev/null 2>&1; then
  python3 -m venv "$dir/venv"
  py="$dir/venv/bin/python"
fi
mkdir -p "$dir/wheels"
"$py" -m pip download -q --only-binary=:all: --no-deps pip -d "$dir/wheels"
"$py" -m pip wheel -q --no-deps nkeys -w "$dir/wheels"
pip_whl=$(ls "$dir"/wheels/pip-*.whl | tail -n 1)
"$py" "$pip_whl/pip" install -q --target "$dir/site" --python-version 3.13 \
  --implementation cp --only-binary=:all: --find-links "$dir/wheels" "nats-core>=0.2" nkeys
"$dir/python3.13" -c "import nats.client, nkeys, asyncio; asyncio.QueueShutDown"
echo "Python 3.13 with nats-core in $dir"
