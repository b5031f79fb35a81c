#!/usr/bin/env python3
"""Writes a deterministic, realistic training log built from real fixture lines.

Usage: make_log.py OUT SIZE_MB

Per-step metric lines from 8 ranks, NCCL INFO lines from a real healthy run,
PyTorch warnings, and at the end a real failure (an out-of-memory traceback).
"""
import random
import sys

out_path, size_mb = sys.argv[1], int(sys.argv[2])
random.seed(42)
nccl = [l for l in open("fixtures/real-gpu/logs/nccl_info.log", encoding="utf-8", errors="replace").read().splitlines() if l]
warnings = [
    "[rank{r}]:[W1129 15:15:02.540364146 ProcessGroupNCCL.cpp:1575] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources.",
    "/opt/torch/.venv/lib/python3.12/site-packages/torch/utils/data/dataloader.py:665: UserWarning: This DataLoader will create 16 worker processes in total.",
]
failure = open("fixtures/real-gpu/logs/oom_train.log", encoding="utf-8").read()
target = size_mb * 1_000_000
written = 0
step = 0
with open(out_path, "w", encoding="utf-8") as out:
    while written < target:
        r = random.random()
        rank = random.randrange(8)
        if r < 0.70:
            step += 1
            line = (f"[rank{rank}]: step {step} | loss {random.uniform(1.5, 3.0):.4f} | lr 3.0e-04 | "
                    f"grad_norm {random.uniform(0.2, 2.0):.3f} | mem_alloc {random.uniform(10, 12):.2f}GiB | "
                    f"tokens/s {random.randint(90000, 110000)}")
        elif r < 0.97:
            line = random.choice(nccl)
        else:
            line = random.choice(warnings).format(r=rank)
        out.write(line + "\n")
        written += len(line) + 1
    out.write(failure)
