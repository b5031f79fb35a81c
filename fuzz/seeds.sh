#!/usr/bin/env bash
# Builds the seed corpora under fuzz/corpus/<target>/ from the repository's
# fixtures and rules. Cores are decompressed and cut to their first
# 256 KiB, except a few small ones kept whole. Needs zstd, gzip and xz.
set -eu  # no pipefail: `head` closes the pipes it cuts short
cd "$(dirname "$0")"
root=..
corpus=corpus
head_len=$((256 * 1024))
rm -rf "$corpus"
mkdir -p "$corpus"/{line,rule_file,host_core,gpu_core,open,pickle,flight,snapshot,stack_dump,render,zip_archive}

# Text: every log and text fixture, at most 64 KiB of each.
find "$root/fixtures" -type f \( -name '*.log' -o -name '*.txt' \) -print0 | sort -z |
  while IFS= read -r -d '' f; do
    name=$(echo "${f#"$root/fixtures/"}" | tr '/' '_')
    head -c 65536 "$f" >"$corpus/line/$name"
  done

# Rule files: every built-in rule.
find "$root/rules" -type f -name '*.toml' -print0 | sort -z |
  while IFS= read -r -d '' f; do
    cp "$f" "$corpus/rule_file/$(basename "$f")"
  done

# Cores: the heads of every core; whole ones up to 512 KiB.
core() {
  local f=$1 target=$2 name
  name=$(basename "$f" .zst)
  zstd -dc "$f" | head -c "$head_len" >"$corpus/$target/$name.head"
  local size
  size=$(zstd -dc "$f" | wc -c)
  if [ "$size" -le $((512 * 1024)) ]; then
    zstd -dc "$f" >"$corpus/$target/$name"
  fi
}
for f in "$root"/fixtures/host-cores/core.*.zst "$root"/fixtures/real-gpu/cores/core.*.zst; do
  core "$f" host_core
done
for f in "$root"/fixtures/gpu-cores/*.nvcudmp.zst "$root"/fixtures/real-gpu/cores/*.nvcudmp.zst; do
  core "$f" gpu_core
done

# Whole inputs: a few logs plain and compressed three ways, and core heads.
n=0
for f in "$corpus"/line/*; do
  n=$((n + 1))
  [ $((n % 6)) -eq 0 ] || continue
  base=$(basename "$f")
  head -c 16384 "$f" >"$corpus/open/$base"
  gzip -c "$corpus/open/$base" >"$corpus/open/$base.gz"
  zstd -q -c "$corpus/open/$base" >"$corpus/open/$base.zst"
  xz -c "$corpus/open/$base" >"$corpus/open/$base.xz"
  # Framing: a skippable frame first (as pzstd writes), a checksummed
  # frame, two concatenated members and streams with stream padding.
  { printf '\x50\x2a\x4d\x18\x04\x00\x00\x00\x00\x00\x00\x00'
    zstd -q -c --check "$corpus/open/$base"; } >"$corpus/open/$base.pzst"
  cat "$corpus/open/$base.gz" "$corpus/open/$base.gz" >"$corpus/open/$base.2.gz"
  { cat "$corpus/open/$base.xz"; printf '\0\0\0\0'; cat "$corpus/open/$base.xz"; } \
    >"$corpus/open/$base.2.xz"
done
for f in "$corpus"/host_core/*.head "$corpus"/gpu_core/*.head; do
  head -c 16384 "$f" >"$corpus/open/$(basename "$f")"
done

du -sh "$corpus"/*

# PyTorch's dumps: every flight recorder and memory snapshot fixture whole
# (the larger snapshots cut to 256 KiB), and the logs with stack dumps.
for f in "$root"/fixtures/multi-gpu/stall/fr_trace_rank_* "$root"/fixtures/dumps/nccl/fr_trace_* "$root"/fixtures/dumps/gloo-empty-fr/*; do
  name=$(echo "${f#"$root/fixtures/"}" | tr '/' '_')
  cp "$f" "$corpus/flight/$name"
  cp "$f" "$corpus/pickle/$name"
done
for f in "$root"/fixtures/dumps/memory/*.pickle; do
  name=$(basename "$f")
  head -c "$head_len" "$f" >"$corpus/snapshot/$name"
  head -c "$head_len" "$f" >"$corpus/pickle/$name"
done
find "$root/fixtures/dumps" -type f \( -name '*.log' -o -name '*.txt' \) -print0 | sort -z |
  while IFS= read -r -d '' f; do
    name=$(echo "${f#"$root/fixtures/"}" | tr '/' '_')
    head -c 65536 "$f" >"$corpus/stack_dump/$name"
  done

# Rendering: the first byte is the length of a file name, then the name,
# then a log. The logs that name a root cause, with their own names, and
# logs and names that try to act on a terminal, a CI runner or Markdown.
render() {
  local name=$1 src=$2 out=$3
  { printf "\\$(printf '%03o' "$(LC_ALL=C printf '%s' "$name" | wc -c)")"
    printf '%s' "$name"
    head -c 16384 "$src"; } >"$corpus/render/$out"
}
for f in "$root"/fixtures/real-gpu/logs/*.log; do
  render "$(basename "$f")" "$f" "$(basename "$f")"
done
oom='torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which 4.98 GiB is free.'
hostile=$(mktemp)
n=0
for attack in '\033]52;c;aGk=\007\033[2J\302\233\342\200\256' '\n::error::pwned ::add-mask::x' \
  ' ##[error]x ##vso[task.complete result=Failed]y' '`<img src=x>` ``a` [l](http://e.example) www.e.example a@b.c' \
  '# h\n- item\n1. x\n| a | b |' '\r\010\0\013\014\177 \342\201\246\342\200\213'; do
  n=$((n + 1))
  printf "step 1\\n$oom $attack\\nterminate called: $attack\\n" >"$hostile"
  render "$(printf "a$attack" | tr -d '\000' | head -c 40)" "$hostile" "hostile-$n"
done
rm -f "$hostile"

# Legacy zstd: a v0.7 frame of one raw block.
printf '\047\265\057\375\000\120\100\000\005hello\300\000\000' >"$corpus/open/legacy-v07.zst"

# Zip archives: the fixture archive, and the hostile one the first run found.
cp "$root/fixtures/archives/multi-gpu-oom.zip" "$root/tests/data/zip-bad-extra-field.zip" \
  "$corpus/zip_archive/"
