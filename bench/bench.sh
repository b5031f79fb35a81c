#!/usr/bin/env bash
# Benchmarks coroner side by side with ripgrep on generated realistic logs,
# and prints coroner/baseline wall-time ratios (the fastest of three runs each).
# Usage: bench/bench.sh [SIZE_MB]   (default 1000). Needs python3, rg, zstd,
# gzip and GNU time.
#   1. one SIZE_MB log: `rg -c -i error FILE` against `coroner analyze FILE`,
#      and `cat FILE | coroner analyze -`
#   2. the same log compressed: `zstd -dc | rg` and `gzip -dc | rg` against
#      coroner reading the .zst and the .gz
#   3. 20 000 small per-rank files (the first 200 MB of the log):
#      `rg -c -i error DIR` against `coroner analyze DIR`
#   4. the rule-count curve: 1, 100 and 500 user rules instead of the built-in ones
# Each coroner run must name the same root cause.
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-1000}
tmp=${TMPDIR:-/tmp}/coroner-bench
mkdir -p "$tmp"
log=$tmp/big-${size}mb.log
cargo build --release -q
bin=$PWD/target/release/coroner
[ -f "$log" ] || python3 bench/make_log.py "$log" "$size"
[ -f "$log.zst" ] || zstd -q -T0 "$log" -o "$log.zst"
[ -f "$log.gz" ] || gzip -c "$log" > "$log.gz"
dir=$tmp/ranks-20000
if [ ! -d "$dir" ]; then
  mkdir -p "$dir"
  head -c 200000000 "$log" > "$tmp/head.log"
  (cd "$dir" && split -n l/20000 -d -a 5 --additional-suffix=.log "$tmp/head.log" rank)
  rm "$tmp/head.log"
fi
bytes=$(stat -c %s "$log")
cat "$log" "$log.zst" "$log.gz" > /dev/null   # warm the page cache for every tool
cat "$dir"/* > /dev/null

best() { # command line -> "seconds peak_kb" of the fastest of three runs
  local b=999999 r=0
  for _ in 1 2 3; do
    /usr/bin/time -q -f "%e %M" -o "$tmp/time" sh -c "$1" > /dev/null || true
    read -r s kb < "$tmp/time"
    if python3 -c "import sys; sys.exit(0 if $s < $b else 1)"; then b=$s; r=$kb; fi
  done
  echo "$b $r"
}
row() { # name, seconds, kb, bytes
  python3 -c "s=max($2,0.001); print(f'{\"$1\":<46} {s:6.2f} s {$4/s/1e6:7.0f} MB/s  peak RSS {$3/1024:6.1f} MiB')"
}
ratio() { # name, coroner seconds, baseline seconds
  python3 -c "print(f'{\"$1\":<46} {max($2,0.001)/max($3,0.001):5.2f}x')"
}
cause() { # command line -> the root cause it names
  sh -c "$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["root_cause"]; print(r["category"], "rank", r.get("rank"))'
}

echo "input: $log ($((bytes / 1000000)) MB), $(nproc) cores, $($bin rules list | tail -1)"
read -r rg_s rg_kb <<< "$(best "rg -c -i error '$log'")"; row "rg -c -i error FILE" "$rg_s" "$rg_kb" "$bytes"
read -r c_s c_kb <<< "$(best "$bin analyze --format json '$log'")"; row "coroner analyze FILE" "$c_s" "$c_kb" "$bytes"
read -r p_s p_kb <<< "$(best "cat '$log' | $bin analyze --format json -")"; row "cat FILE | coroner analyze -" "$p_s" "$p_kb" "$bytes"
read -r zr_s zr_kb <<< "$(best "zstd -dc '$log.zst' | rg -c -i error")"; row "zstd -dc FILE.zst | rg -c -i error" "$zr_s" "$zr_kb" "$bytes"
read -r z_s z_kb <<< "$(best "$bin analyze --format json '$log.zst'")"; row "coroner analyze FILE.zst" "$z_s" "$z_kb" "$bytes"
read -r gr_s gr_kb <<< "$(best "gzip -dc '$log.gz' | rg -c -i error")"; row "gzip -dc FILE.gz | rg -c -i error" "$gr_s" "$gr_kb" "$bytes"
read -r g_s g_kb <<< "$(best "$bin analyze --format json '$log.gz'")"; row "coroner analyze FILE.gz" "$g_s" "$g_kb" "$bytes"
dir_bytes=$(du -sb "$dir" | cut -f1)
read -r dr_s dr_kb <<< "$(best "rg -c -i error '$dir'")"; row "rg -c -i error DIR (20 000 files)" "$dr_s" "$dr_kb" "$dir_bytes"
read -r d_s d_kb <<< "$(best "$bin analyze --format json '$dir'")"; row "coroner analyze DIR (20 000 files)" "$d_s" "$d_kb" "$dir_bytes"
for n in 1 100 500; do
  rules=$tmp/rules-$n
  [ -d "$rules" ] || python3 bench/make_rules.py "$rules" "$n"
  read -r r_s r_kb <<< "$(best "$bin analyze --format json --no-builtin-rules --rules '$rules' '$log'")"
  row "coroner analyze FILE, $n user rules only" "$r_s" "$r_kb" "$bytes"
done

echo
echo "coroner / baseline wall time (at most 1.00x is the goal):"
ratio "FILE / rg" "$c_s" "$rg_s"
ratio "FILE.zst / zstd -dc | rg" "$z_s" "$zr_s"
ratio "FILE.gz / gzip -dc | rg" "$g_s" "$gr_s"
ratio "DIR / rg DIR" "$d_s" "$dr_s"
echo
echo "root cause named:"
for form in "'$log'" "'$log.zst'" "'$log.gz'"; do
  echo "  $form: $(cause "$bin analyze --format json $form")"
done
echo "  stdin: $(cause "cat '$log' | $bin analyze --format json -")"
