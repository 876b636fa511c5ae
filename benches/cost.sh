#!/usr/bin/env bash
# The cost of beaver's code per message (see examples/cost.rs):
#   - heap allocations per published and per delivered message, counted with dhat while
#     the measured messages flow (after a warm-up);
#   - instructions per delivered message in beaver's reader and writer threads, counted by
#     callgrind (repeatable, whatever else the machine does): two runs with different
#     message counts, divided difference, so that start-up cancels out;
#   - cold start: instructions to connect the clients and deliver the first message.
# Usage: benches/cost.sh            (needs valgrind: apt-get install valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --example cost >&2
BIN=target/release/examples/cost
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# Instructions collected below the reader and writer threads' entry points only.
cg() { # cg SCENARIO WARMUP MSGS -> total instructions
  valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.out" \
    --toggle-collect='beaver::session::Connection::run' \
    --toggle-collect='beaver::writer::Writer::run' \
    "$BIN" --scenario "$1" --warmup "$2" --msgs "$3" >/dev/null 2>&1
  sed -n 's/^summary: //p' "$OUT/cg.out"
}

printf '| scenario | allocations per published msg | allocations per delivery | instructions per delivery (steady) | instructions, cold start (connect + first message) |\n'
printf '| --- | ---: | ---: | ---: | ---: |\n'
for spec in "one-to-one 1 20000 60000" "fanout-100 100 2000 6000" "queue 1 20000 60000" "reqrep 2 2000 6000"; do
  set -- $spec
  sc=$1; per=$2; n1=$3; n2=$4
  allocs=$("$BIN" --scenario "$sc" --warmup 100000 --msgs 100000 --allocs)
  a_pub=$(printf '%s' "$allocs" | python3 -c 'import json,sys; print("%.5f" % json.load(sys.stdin)["allocs_per_published"])')
  a_del=$(printf '%s' "$allocs" | python3 -c 'import json,sys; print("%.6f" % json.load(sys.stdin)["allocs_per_delivery"])')
  i1=$(cg "$sc" 1000 "$n1")
  i2=$(cg "$sc" 1000 "$n2")
  steady=$(( (i2 - i1) / ((n2 - n1) * per) ))
  cold=$(cg "$sc" 0 1)
  printf '| %s | %s | %s | %s | %s |\n' "$sc" "$a_pub" "$a_del" "$steady" "$cold"
done
