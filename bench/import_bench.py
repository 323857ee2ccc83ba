"""How long ``import lovia`` takes, against the reference implementation (not a test).

    .venv/bin/python bench/import_bench.py [--runs 15] [--reference /tmp/refvenv/bin/python]
        [--also 'from lovia import Agent, Runner' --also 'import lovia_server.lsp.language_server'] [--top 15]
        [--ours-path DIR]   # time another copy of lovia (e.g. `git archive` of an older commit)

The reference is PyPI's ``lovia`` 0.9.x installed in a venv of its own::

    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install 'lovia<1'

Its interpreter comes from ``--reference`` or ``$LOVIA_REFERENCE_PYTHON`` (default
``/tmp/refvenv/bin/python``); without one the reference is skipped with a message.

Each sample is a fresh interpreter, so nothing is cached in ``sys.modules``; ours and the
reference's alternate, so both see the same machine load. A sample times the ``import``
statement inside the process (``time.perf_counter`` around it), which leaves out the
interpreter's own start-up; the whole process's wall time is reported as well. Both run from
an empty directory so the checkout on ``sys.path`` cannot shadow the reference. Medians count.

Bytecode: an installed package has ``.pyc`` files, a checkout may not (and
``PYTHONDONTWRITEBYTECODE`` may be set), which would time the compiler instead of the
import. So every child runs with bytecode writing on and ``PYTHONPYCACHEPREFIX`` pointing
into a temporary directory, and one warm-up run per statement (discarded) compiles both
sides before any sample is taken. Nothing is written into the checkout.

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

PROBE = "import time\nt = time.perf_counter()\n{statement}\nprint(time.perf_counter() - t)\n"


def child_env(cwd: str, path: str | None) -> dict[str, str]:
    """The environment of a sample: bytecode cached under ``cwd``, ``path`` first on sys.path."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")
    }
    env["PYTHONPYCACHEPREFIX"] = str(Path(cwd) / "pycache")
    if path:
        env["PYTHONPATH"] = path
    return env


def sample(python: str, statement: str, cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """(seconds inside the import statement, seconds for the whole process)."""
    start = time.perf_counter()
    out = subprocess.run(
        [python, "-c", PROBE.format(statement=statement)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"{python} failed on {statement!r}:\n{out.stderr.strip()}")
    return float(out.stdout.strip().splitlines()[-1]), wall


def top_imports(
    python: str, statement: str, cwd: str, env: dict[str, str], count: int
) -> list[tuple[int, str]]:
    out = subprocess.run(
        [python, "-X", "importtime", "-c", statement],
        cwd=cwd,
        env=env,
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
    parser.add_argument("--runs", type=int, default=15, help="fresh processes per statement")
    parser.add_argument("--python", default=sys.executable, help="our interpreter")
    parser.add_argument("--ours-path", help="put this directory first on our sys.path")
    parser.add_argument("--reference", help=f"reference interpreter (default {DEFAULT_REFERENCE})")
    parser.add_argument(
        "--also",
        action="append",
        metavar="STATEMENT",
        help="also time this import statement of ours (repeatable); `import lovia` always runs",
    )
    parser.add_argument(
        "--top", type=int, default=0, help="print the N slowest imports of each statement of ours"
    )
    args = parser.parse_args(argv)

    reference = reference_python(args.reference)
    if reference is None:
        print(
            "reference skipped: no interpreter at --reference / $LOVIA_REFERENCE_PYTHON / "
            f"{DEFAULT_REFERENCE} (create it: python3 -m venv /tmp/refvenv && "
            "/tmp/refvenv/bin/pip install 'lovia<1')"
        )
    statements = ["import lovia", *(s for s in args.also or [] if s != "import lovia")]

    with tempfile.TemporaryDirectory() as cwd:
        our_env = child_env(cwd, args.ours_path)
        ref_env = child_env(cwd, None)
        for statement in statements:  # warm-up: compile to bytecode, not timed
            sample(args.python, statement, cwd, our_env)
        if reference is not None:
            sample(reference, "import lovia", cwd, ref_env)
        ours: dict[str, list[tuple[float, float]]] = {s: [] for s in statements}
        theirs: list[tuple[float, float]] = []
        for _ in range(args.runs):
            for statement in statements:
                ours[statement].append(sample(args.python, statement, cwd, our_env))
            if reference is not None:
                theirs.append(sample(reference, "import lovia", cwd, ref_env))

        load = os.getloadavg()
        print(f"{args.runs} fresh processes each; load average {load[0]:.2f} {load[1]:.2f}")
        width = max(len(s) for s in statements) + 2
        print(f"{'':11}{'':{width}}{'import (median)':>16}{'process (median)':>18}")
        medians: dict[str, tuple[float, float]] = {}
        for statement, rows in ours.items():
            medians[statement] = (
                statistics.median(r[0] for r in rows),
                statistics.median(r[1] for r in rows),
            )
            imp, wall = medians[statement]
            print(f"{'ours':<11}{statement:<{width}}{ms(imp):>16}{ms(wall):>18}")
        if theirs:
            ref_imp = statistics.median(r[0] for r in theirs)
            ref_wall = statistics.median(r[1] for r in theirs)
            print(f"{'reference':<11}{'import lovia':<{width}}{ms(ref_imp):>16}{ms(ref_wall):>18}")
            print("ratio ours/reference (import time; whole process in brackets):")
            for statement, (imp, wall) in medians.items():
                ratio = imp / ref_imp
                verdict = "meets" if ratio <= TARGET_RATIO else "misses"
                print(
                    f"  {statement:<{width}}{ratio:5.2f}x ({wall / ref_wall:.2f}x)  "
                    f"{verdict} the {TARGET_RATIO}x target"
                )

        for statement in statements if args.top else []:
            print(f"\nslowest imports of `{statement}` (cumulative, one -X importtime run):")
            for micros, name in top_imports(args.python, statement, cwd, our_env, args.top):
                print(f"  {micros / 1000:8.1f} ms  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
