"""`pip check`, scoped to what the given distributions need.

The browser-use venv sees the machine's own site-packages, so a plain
`pip check` there judges every package anyone installed on the machine (a
mutation tool wanting a newer click, say) and failed CI for a conflict no
test could meet. This keeps pip's verdicts only for packages in the
dependency closure of the roots named on the command line.

    python .ci/pip_check_closure.py actonce browser-use
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata

from packaging.requirements import Requirement


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(roots: list[str]) -> set[str]:
    seen: set[str] = set()
    top = {_canon(r) for r in roots}
    todo = list(top)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for text in requires:
            req = Requirement(text)
            # a root's extras count (the suite installs them); a dependency's do not
            extra = "extra" in str(req.marker)
            if req.marker is None or (extra and name in top) or req.marker.evaluate({"extra": ""}):
                todo.append(_canon(req.name))
    return seen


def main(roots: list[str]) -> int:
    if not roots:
        print("usage: pip_check_closure.py DIST [DIST ...]", file=sys.stderr)
        return 2
    for root in roots:
        metadata.distribution(root)  # a root that is not installed is a failure
    wanted = closure(roots)
    out = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True, check=False
    ).stdout
    bad = [line for line in out.splitlines() if line.split() and _canon(line.split()[0]) in wanted]
    others = [
        line
        for line in out.splitlines()
        if line.strip() and line not in bad and "No broken" not in line
    ]
    for line in others:
        print(f"pip check (outside {', '.join(roots)}; ignored): {line}")
    for line in bad:
        print(f"pip check: {line}")
    print(f"pip check: {len(wanted)} distributions in the closure, {len(bad)} conflicts")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
