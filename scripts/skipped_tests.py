#!/usr/bin/env python3
"""Prints one block naming every test that was skipped, and why, from CTest's JUnit reports.

Usage: scripts/skipped_tests.py REPORT.xml...   (ctest --output-junit writes them; see test.sh)
A test is skipped when it cannot run here (a CPU without bf16 instructions, a machine without
network namespaces...). The reason is the first line of the test's own explanation: the line after
GoogleTest's "Skipped", or a script's line containing "SKIP".
"""
import sys
import xml.etree.ElementTree as ET


def reason(output: str) -> str:
    lines = [l.strip() for l in output.splitlines()]
    for i, line in enumerate(lines):
        if line.endswith("Skipped") and i + 1 < len(lines) and lines[i + 1]:
            return lines[i + 1]
    for line in lines:
        if "SKIP" in line and not line.startswith("[  SKIPPED"):
            return line
    return "no reason printed"


def main(paths):
    skipped = []
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            skipped.append((path, f"report unreadable: {e}"))
            continue
        for case in root.iter("testcase"):
            if case.find("skipped") is None:
                continue
            out = case.findtext("system-out") or ""
            skipped.append((case.get("name", "?"), reason(out)))
    print(f"== skipped tests: {len(skipped)}")
    for name, why in skipped:
        print(f"  {name}: {why}")


if __name__ == "__main__":
    main(sys.argv[1:])
