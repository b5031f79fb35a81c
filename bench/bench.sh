#!/usr/bin/env bash
# Benchmarks coroner side by side with ripgrep on generated realistic logs.
# Usage: bench/bench.sh [SIZE_MB]   (default 1000). Needs python3, rg and GNU time.
#   1. one SIZE_MB log: `rg -c -i error`, `coroner analyze FILE`, `cat FILE | coroner analyze -`
#   2. the same bytes as 512 per-rank files in a directory
#   3. the rule-count curve: 1, 100 and 500 user rules instead of the built-in ones
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-1000}
tmp=${TMPDIR:-/tmp}/coroner-bench
mkdir -p "$tmp"
log=$tmp/big-${size}mb.log
cargo build --release -q
bin=./target/release/coroner
[ -f "$log" ] || python3 bench/make_log.py "$log" "$size"
bytes=$(stat -c %s "$log")
cat "$log" > /dev/null   # warm the page cache for every tool

best() { # command... -> "seconds peak_kb" of the fastest of three runs
  local b=999999 r=0
  for _ in 1 2 3; do
    /usr/bin/time -q -f "%e %M" -o "$tmp/time" "$@" > /dev/null || true
    read -r s kb < "$tmp/time"
    if python3 -c "import sys; sys.exit(0 if $s < $b else 1)"; then b=$s; r=$kb; fi
  done
  echo "$b $r"
}
row() { # name, seconds, kb
  python3 -c "b=$bytes; s=max($2,0.001); print(f'{\"$1\":<44} {s:6.2f} s {b/s/1e6:7.0f} MB/s  peak RSS {$3/1024:6.1f} MiB')"
}

echo "input: $log ($((bytes / 1000000)) MB), $(nproc) cores, $($bin rules list | tail -1)"
read -r rg_s rg_kb <<< "$(best rg -c -i error "$log")"; row "rg -c -i error" "$rg_s" "$rg_kb"
read -r c_s c_kb <<< "$(best $bin analyze --format json "$log")"; row "coroner analyze FILE" "$c_s" "$c_kb"
read -r p_s p_kb <<< "$(best sh -c "cat '$log' | $bin analyze --format json -")"; row "cat FILE | coroner analyze -" "$p_s" "$p_kb"
python3 -c "print(f'coroner / rg wall-time ratio: {$c_s/max($rg_s,0.001):.1f}x')"
$bin analyze --format json "$log" | python3 -c 'import json,sys; r=json.load(sys.stdin); f=r["findings"][0]; print("root cause found:", r["root_cause"]["category"], "at line", f["first_seen"]["line"])' || true

dir=$tmp/ranks-${size}mb
if [ ! -d "$dir" ]; then mkdir -p "$dir" && (cd "$dir" && split -n l/512 -d -a 3 --additional-suffix=.log "$log" rank); fi
read -r d_s d_kb <<< "$(best $bin analyze --format json "$dir")"; row "coroner analyze DIR (512 rank files)" "$d_s" "$d_kb"

for n in 1 100 500; do
  rules=$tmp/rules-$n
  [ -d "$rules" ] || python3 bench/make_rules.py "$rules" "$n"
  read -r r_s r_kb <<< "$(best $bin analyze --format json --no-builtin-rules --rules "$rules" "$log")"
  row "coroner analyze FILE, $n user rules only" "$r_s" "$r_kb"
done
