#!/usr/bin/env bash
# Scans a generated realistic log with coroner and with ripgrep side by side.
# Usage: bench/bench.sh [SIZE_MB]   (default 1000). Needs python3, rg, GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-1000}
log=${TMPDIR:-/tmp}/coroner-bench-${size}mb.log
cargo build --release -q
[ -f "$log" ] || python3 bench/make_log.py "$log" "$size"
bytes=$(stat -c %s "$log")
cat "$log" > /dev/null   # warm the page cache for both tools

measure() { # name, command...
  local name=$1; shift
  local best=999999 rss=0
  for _ in 1 2 3; do
    /usr/bin/time -q -f "%e %M" -o /tmp/coroner-bench.time "$@" > /dev/null || true
    read -r secs kb < /tmp/coroner-bench.time
    best=$(python3 -c "print(min($best, $secs))")
    rss=$kb
  done
  python3 -c "b=$bytes; s=max($best,0.001); print(f'{\"$name\":<34} {s:7.2f} s {b/s/1e6:9.0f} MB/s  peak RSS {$rss/1024:7.1f} MiB')"
  echo "$best" > "/tmp/coroner-bench.$name"
}

echo "input: $log ($((bytes / 1000000)) MB), $(nproc) cores"
measure "rg -c -i error" rg -c -i error "$log"
measure "coroner analyze (file)" ./target/release/coroner analyze --format json "$log"
measure "cat | coroner analyze -" sh -c "cat '$log' | ./target/release/coroner analyze --format json -"
python3 -c "
rg=float(open('/tmp/coroner-bench.rg -c -i error').read()); c=float(open('/tmp/coroner-bench.coroner analyze (file)').read())
print(f'coroner / rg wall-time ratio: {c/max(rg,0.001):.1f}x')"
./target/release/coroner analyze --format json "$log" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("root cause found:", r["root_cause"]["category"], "at line", r["findings"][0]["first_seen"]["line"])'
