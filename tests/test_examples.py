"""Every example runs offline (scripted model) and prints what it promises."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))
EXPECTED = {
    "01_hello.py": "Hello!",
    "02_tools.py": "13.75",
    "03_streaming.py": "[word_count -> 6]",
    "04_structured_output.py": "Pancakes (20 min): flour, milk, eggs",
    "05_handoff.py": "Spanish: ¡Hola!",
    "06_approval.py": "[refund] refunded 250.00 on A-17",
    "07_steering.py": "[steer delivered at turn 2] Please also CC my manager.",
    "08_custom_plugin.py": "{'slo': 'service level objective'}",
    "09_eval_suite.py": "eval: 2/3 cases passed (67%)",
}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(path):
    env = {k: v for k, v in os.environ.items() if k != "LOVIA_MODEL"}
    proc = subprocess.run(
        [sys.executable, str(path)],
        input="y\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert EXPECTED[path.name] in proc.stdout


def test_every_example_has_an_expectation():
    assert {p.name for p in EXAMPLES} == set(EXPECTED)
