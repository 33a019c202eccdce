#!/usr/bin/env python3
"""Checks that every crate in the dependency graph has a license compatible with
AGPL-3.0-or-later. Reads `cargo metadata`; a crate passes when its SPDX expression can be
satisfied with licenses from ALLOWED (for `A OR B` one side suffices, for `A AND B` both must)."""
import json
import re
import subprocess
import sys

ALLOWED = {
    "MIT", "MIT-0", "Apache-2.0", "Apache-2.0 WITH LLVM-exception", "BSD-2-Clause", "BSD-3-Clause",
    "ISC", "Zlib", "Unicode-3.0", "Unicode-DFS-2016", "CC0-1.0", "Unlicense", "BSL-1.0", "MPL-2.0",
    "0BSD", "CDLA-Permissive-2.0", "AGPL-3.0-or-later", "AGPL-3.0", "LGPL-2.1-or-later", "bzip2-1.0.6",
}


def satisfiable(expr: str) -> bool:
    expr = expr.replace("/", " OR ").strip()
    # Split on OR at the top level (parentheses are rare in the graph; treat them as grouping).
    depth, parts, cur = 0, [], ""
    tokens = re.split(r"(\(|\)|\s+OR\s+)", expr)
    for t in tokens:
        if t == "(":
            depth += 1
        elif t == ")":
            depth -= 1
        if depth == 0 and re.fullmatch(r"\s+OR\s+", t or ""):
            parts.append(cur)
            cur = ""
        else:
            cur += t or ""
    parts.append(cur)
    for part in parts:
        part = part.strip()
        if part.startswith("(") and part.endswith(")"):
            if satisfiable(part[1:-1]):
                return True
            continue
        ands = [a.strip().strip("()") for a in re.split(r"\s+AND\s+", part)]
        if all(a in ALLOWED or (" OR " in a and satisfiable(a)) for a in ands):
            return True
    return False


def main() -> int:
    meta = json.loads(subprocess.check_output(["cargo", "metadata", "--format-version", "1", "--locked"]))
    workspace = set(meta["workspace_members"])
    bad = []
    for pkg in meta["packages"]:
        if pkg["id"] in workspace:
            if pkg.get("license") != "AGPL-3.0-or-later":
                bad.append(f"{pkg['name']}: workspace crate must be AGPL-3.0-or-later, is {pkg.get('license')}")
            continue
        lic = pkg.get("license")
        if not lic:
            bad.append(f"{pkg['name']} {pkg['version']}: no SPDX license field")
        elif not satisfiable(lic):
            bad.append(f"{pkg['name']} {pkg['version']}: {lic}")
    if bad:
        print("license check failed; not compatible with AGPL-3.0-or-later:")
        print("\n".join("  " + b for b in bad))
        return 1
    print(f"license check: {len(meta['packages'])} crates, all compatible with AGPL-3.0-or-later")
    return 0


if __name__ == "__main__":
    sys.exit(main())
