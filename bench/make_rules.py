#!/usr/bin/env python3
"""Writes N synthetic user rules, each with its own literal, to DIR.

Usage: make_rules.py DIR N

Each rule looks for a made-up failure line (`<word> subsystem <id> failed`);
none occurs in the benchmark log, so the rules cost only their share of the
literal search, which is what the scaling curve measures.
"""
import os
import random
import sys

TEMPLATE = """id = "{rid}"
title = "Synthetic rule {i}"
category = "python-error"
severity = "error"
message = "{word} subsystem {{id}} failed"
remediation = ["none"]

[match]
literals = ["{word} subsystem"]
any = ["{word} subsystem (?P<id>\\\\d+) failed"]

[[examples]]
fires = true
input = "{word} subsystem 7 failed"

[[examples]]
fires = false
input = "{word} subsystem 7 started"
"""

out, n = sys.argv[1], int(sys.argv[2])
os.makedirs(out, exist_ok=True)
random.seed(n)
letters = "abcdefghijklmnopqrstuvwxyz"
for i in range(n):
    word = "".join(random.choice(letters) for _ in range(7))
    rid = f"synthetic-{i:04d}"
    with open(os.path.join(out, f"{rid}.toml"), "w") as f:
        f.write(TEMPLATE.format(rid=rid, i=i, word=word))
