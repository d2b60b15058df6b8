#!/usr/bin/env python3
"""Rewrites the table under "### The flags" in docs/cli.md from `cpuft flag-table`.

Usage: tools/update_cli_flag_table.py [CPUFT]   (default build/release/apps/cpuft)
The unit test TrainFlags.DocsHoldTheTable fails until the table matches src/train/train_flags.cc.
"""
import pathlib
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
cpuft = sys.argv[1] if len(sys.argv) > 1 else str(root / "build/release/apps/cpuft")
table = subprocess.run([cpuft, "flag-table"], capture_output=True, text=True, check=True).stdout
docs = root / "docs/cli.md"
text = docs.read_text()
start = text.index("### The flags\n\n") + len("### The flags\n\n")
end = text.index("\n## cpuft predict")
docs.write_text(text[:start] + table + text[end:])
print(f"{docs}: flag table rewritten ({table.count(chr(10)) - 2} flags)")
