"""How long ``import lovia`` takes, against the reference implementation (not a test).

    .venv/bin/python bench/import_bench.py [--runs 15] [--reference /tmp/refvenv/bin/python]
                                           [--module lovia --module lovia.agent ...] [--top 15]

The reference is PyPI's ``lovia`` 0.9.x installed in a venv of its own::

    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install 'lovia<1'

Its interpreter comes from ``--reference`` or ``$LOVIA_REFERENCE_PYTHON`` (default
``/tmp/refvenv/bin/python``); without one the reference is skipped with a message.

Each sample is a fresh interpreter, so nothing is cached in ``sys.modules``; ours and the
reference's alternate, so both see the same machine load. A sample times the ``import``
statement inside the process (``time.perf_counter`` around it), which leaves out the
interpreter's own start-up; the whole process's wall time is reported as well. Both run from
an empty directory so the checkout on ``sys.path`` cannot shadow the reference. Medians count.

Target (issue 17): ours <= 0.6x the reference's ``import lovia`` in the same run.
``--top N`` prints the N slowest imports (cumulative, from ``-X importtime``) of ours.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_REFERENCE = "/tmp/refvenv/bin/python"
TARGET_RATIO = 0.6

PROBE = "import time\nt = time.perf_counter()\nimport {module}\nprint(time.perf_counter() - t)\n"


def sample(python: str, module: str, cwd: str) -> tuple[float, float]:
    """(seconds inside the import statement, seconds for the whole process)."""
    start = time.perf_counter()
    out = subprocess.run(
        [python, "-c", PROBE.format(module=module)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"{python} could not import {module}:\n{out.stderr.strip()}")
    return float(out.stdout.strip().splitlines()[-1]), wall


def top_imports(python: str, module: str, cwd: str, count: int) -> list[tuple[int, str]]:
    out = subprocess.run(
        [python, "-X", "importtime", "-c", f"import {module}"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    rows: list[tuple[int, str]] = []
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.removeprefix("import time:").split("|")
        rows.append((int(cumulative), name.rstrip()))
    return sorted(rows, reverse=True)[:count]


def reference_python(arg: str | None) -> str | None:
    candidate = arg or os.environ.get("LOVIA_REFERENCE_PYTHON") or DEFAULT_REFERENCE
    return candidate if Path(candidate).exists() else None


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="fresh processes per module")
    parser.add_argument("--python", default=sys.executable, help="our interpreter")
    parser.add_argument("--reference", help=f"reference interpreter (default {DEFAULT_REFERENCE})")
    parser.add_argument(
        "--module",
        action="append",
        help="also time these modules of ours (repeatable); `lovia` is always timed",
    )
    parser.add_argument("--top", type=int, default=0, help="print our N slowest imports")
    args = parser.parse_args(argv)

    reference = reference_python(args.reference)
    if reference is None:
        print(
            "reference skipped: no interpreter at --reference / $LOVIA_REFERENCE_PYTHON / "
            f"{DEFAULT_REFERENCE} (create it: python3 -m venv /tmp/refvenv && "
            "/tmp/refvenv/bin/pip install 'lovia<1')"
        )
    modules = ["lovia", *(m for m in args.module or [] if m != "lovia")]

    with tempfile.TemporaryDirectory() as cwd:
        ours: dict[str, list[tuple[float, float]]] = {m: [] for m in modules}
        theirs: list[tuple[float, float]] = []
        for _ in range(args.runs):
            for module in modules:
                ours[module].append(sample(args.python, module, cwd))
            if reference is not None:
                theirs.append(sample(reference, "lovia", cwd))

        load = os.getloadavg()
        print(f"{args.runs} fresh processes each; load average {load[0]:.2f} {load[1]:.2f}")
        print(f"{'':28}{'import (median)':>17}{'process (median)':>19}")
        for module, rows in ours.items():
            imp = statistics.median(r[0] for r in rows)
            wall = statistics.median(r[1] for r in rows)
            print(f"ours       import {module:<17}{ms(imp):>17}{ms(wall):>19}")
        if theirs:
            ref_imp = statistics.median(r[0] for r in theirs)
            ref_wall = statistics.median(r[1] for r in theirs)
            print(f"reference  import {'lovia':<17}{ms(ref_imp):>17}{ms(ref_wall):>19}")
            ours_imp = statistics.median(r[0] for r in ours["lovia"])
            ours_wall = statistics.median(r[1] for r in ours["lovia"])
            ratio = ours_imp / ref_imp
            verdict = "meets" if ratio <= TARGET_RATIO else "misses"
            print(
                f"ratio ours/reference: import {ratio:.2f}x ({verdict} the {TARGET_RATIO}x "
                f"target), whole process {ours_wall / ref_wall:.2f}x"
            )

        if args.top:
            print("\nslowest imports of ours (cumulative, one -X importtime run of `lovia`):")
            for micros, name in top_imports(args.python, "lovia", cwd, args.top):
                print(f"  {micros / 1000:8.1f} ms  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
