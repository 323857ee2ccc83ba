"""The scripted coding session of ``bench/prompt_cache.py``: a small project and the model's turns.

:func:`make_project` writes a Python package with fifteen unimplemented functions, their tests
and a test runner (``tools/check.py``, deterministic output of 1–3 KB). :data:`STEPS` is what
the model does: plan with ``todo_write``, list, read (2–8 KB files), grep, edit every stub
(17 edits), run the tests after each module, keep the todo list current, then summarise. The
tools are the workspace's real ones, so every tool result is what a user's session would carry.

A fake server answers step ``n`` when the request carries ``n`` assistant messages
(:func:`step_of`), so the same script drives any client, in process or through the server.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROMPT = (
    "The ledger package has unimplemented functions (NotImplementedError) in every module. "
    "Implement them all so that `python3 tools/check.py` passes, one module at a time, "
    "and keep a todo list while you work."
)

# module -> [(function, signature, docstring, body, test)]
_STUBS: dict[str, list[tuple[str, str, str, str, str]]] = {
    "money": [
        (
            "add_cents",
            "a: int, b: int",
            "Add two amounts in cents.",
            "return a + b",
            "assert money.add_cents(150, 275) == 425",
        ),
        (
            "format_amount",
            "cents: int",
            "Render cents as '12.34' (negative with a minus).",
            'sign = "-" if cents < 0 else ""\n    cents = abs(cents)\n'
            '    return f"{sign}{cents // 100}.{cents % 100:02d}"',
            'assert money.format_amount(-1234) == "-12.34"',
        ),
        (
            "parse_amount",
            "text: str",
            "Parse '12.34' into cents.",
            'whole, _, frac = text.strip().partition(".")\n'
            '    return int(whole) * 100 + int((frac + "00")[:2])',
            'assert money.parse_amount(" 7.5 ") == 750',
        ),
    ],
    "accounts": [
        (
            "balance",
            "entries: list[tuple[str, int]]",
            "Sum the signed amounts of entries.",
            "return sum(amount for _, amount in entries)",
            'assert accounts.balance([("a", 5), ("b", -2)]) == 3',
        ),
        (
            "open_account",
            "name: str",
            "A new, empty account record.",
            'return {"name": name.strip(), "entries": [], "open": True}',
            'assert accounts.open_account(" x ")["name"] == "x"',
        ),
        (
            "close_account",
            "account: dict[str, object]",
            "Mark an account closed.",
            'closed = dict(account)\n    closed["open"] = False\n    return closed',
            'assert accounts.close_account({"open": True})["open"] is False',
        ),
    ],
    "invoices": [
        (
            "invoice_total",
            "lines: list[tuple[int, int]]",
            "Sum quantity x unit price.",
            "return sum(qty * price for qty, price in lines)",
            "assert invoices.invoice_total([(2, 150), (1, 99)]) == 399",
        ),
        (
            "apply_discount",
            "total: int, percent: int",
            "Total less a percentage, rounded down.",
            "return total - total * percent // 100",
            "assert invoices.apply_discount(1000, 15) == 850",
        ),
        (
            "due_day",
            "day: int, terms: int",
            "Day number the invoice falls due.",
            "return day + terms",
            "assert invoices.due_day(10, 30) == 40",
        ),
        (
            "is_overdue",
            "due: int, today: int",
            "Whether an invoice is past its due day.",
            "return today > due",
            "assert invoices.is_overdue(40, 41)",
        ),
    ],
    "reports": [
        (
            "summarise",
            "balances: dict[str, int]",
            "Total and count of balances.",
            'return {"total": sum(balances.values()), "count": len(balances)}',
            'assert reports.summarise({"a": 1, "b": 2}) == {"total": 3, "count": 2}',
        ),
        (
            "top_accounts",
            "balances: dict[str, int], n: int",
            "The n largest balances' names.",
            "return [k for k, _ in sorted(balances.items(), key=lambda kv: -kv[1])[:n]]",
            'assert reports.top_accounts({"a": 1, "b": 5, "c": 3}, 2) == ["b", "c"]',
        ),
        (
            "render_row",
            "name: str, cents: int",
            "A fixed-width report row.",
            'return f"{name:<20}{cents / 100:>12.2f}"',
            'assert reports.render_row("rent", 120000).endswith("1200.00")',
        ),
        (
            "render_table",
            "balances: dict[str, int]",
            "Rows for every balance, sorted by name.",
            'return "\\n".join(render_row(k, v) for k, v in sorted(balances.items()))',
            'assert reports.render_table({"b": 1, "a": 2}).startswith("a")',
        ),
    ],
    "parsing": [
        (
            "split_fields",
            "line: str",
            "Split a CSV line on commas, trimming fields.",
            'return [f.strip() for f in line.split(",")]',
            'assert parsing.split_fields(" a, b ,c") == ["a", "b", "c"]',
        ),
        (
            "parse_line",
            "line: str",
            "A (account, cents) pair from 'name,12.34'.",
            "name, amount = split_fields(line)\n"
            '    whole, _, frac = amount.partition(".")\n'
            '    return name, int(whole) * 100 + int((frac + "00")[:2])',
            'assert parsing.parse_line("rent, 12.5") == ("rent", 1250)',
        ),
    ],
}

_FIELDS = [
    "account_name",
    "description",
    "reference",
    "currency",
    "category",
    "memo",
    "payee",
    "invoice_number",
    "customer",
    "supplier",
    "ledger_code",
    "cost_centre",
    "project",
    "tax_code",
    "region",
    "department",
    "period",
    "batch",
    "source",
    "approver",
]
# Realistic file sizes: helpers (already implemented) per module.
_HELPERS = {"money": 7, "accounts": 11, "invoices": 15, "reports": 16, "parsing": 5}


def _helper(module: str, index: int) -> tuple[str, str]:
    field_name = _FIELDS[index % len(_FIELDS)]
    name = f"normalise_{field_name}" if index < len(_FIELDS) else f"clean_{field_name}_{index}"
    code = textwrap.dedent(
        f'''
        def {name}(value: str | None, *, default: str = "") -> str:
            """The {field_name.replace("_", " ")} of a {module} record, ready to compare.

            Surrounding whitespace goes, inner runs of whitespace become one space and the
            result is lower-cased; ``None`` or an empty value gives ``default``.
            """
            if value is None:
                return default
            cleaned = " ".join(str(value).split())
            return cleaned.lower() if cleaned else default
        '''
    )
    test = f'assert {module}.{name}("  A  b ") == "a b"'
    return code, f"def test_{name}():\n    {test}\n"


def _stub(name: str, signature: str, doc: str) -> str:
    return (
        f'\n\ndef {name}({signature}):\n    """{doc}"""\n    raise NotImplementedError("{name}")\n'
    )


_CHECK = '''"""Run every test_* function of tests/ and report like a terse pytest."""

import importlib.util
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
SHOWN = 3

results = []
for path in sorted((ROOT / "tests").glob("test_*.py")):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in sorted(n for n in vars(module) if n.startswith("test_")):
        try:
            getattr(module, name)()
            results.append((f"tests/{path.name}::{name}", None))
        except Exception as exc:
            results.append((f"tests/{path.name}::{name}", exc))

by_file = {}
for test, exc in results:
    by_file.setdefault(test.split("::")[0], []).append("." if exc is None else "F")
for name, marks in by_file.items():
    print(f"{name} {''.join(marks)}")
failed = [(t, e) for t, e in results if e is not None]
if failed:
    print("=" * 24 + " FAILURES " + "=" * 24)
for test, exc in failed[:SHOWN]:
    print(f"_____ {test} _____")
    for frame in traceback.extract_tb(exc.__traceback__)[1:]:
        where = Path(frame.filename).resolve().relative_to(ROOT)
        print(f"{where}:{frame.lineno}: in {frame.name}")
        print(f"    {frame.line}")
    print(f"E   {type(exc).__name__}: {exc}")
if failed:
    print("=" * 20 + " short test summary info " + "=" * 20)
for test, exc in failed:
    print(f"FAILED {test} - {type(exc).__name__}: {exc}")
print(f"{len(failed)} failed, {len(results) - len(failed)} passed")
sys.exit(1 if failed else 0)
'''


def make_project(root: Path) -> None:
    """Write the ``ledger`` project into ``root`` (an empty directory)."""
    (root / "src" / "ledger").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "tools").mkdir()
    (root / "src" / "ledger" / "__init__.py").write_text('"""A tiny double-entry ledger."""\n')
    for module, stubs in _STUBS.items():
        helpers = [_helper(module, i) for i in range(_HELPERS[module])]
        source = f'"""The {module} part of the ledger."""\n\nfrom __future__ import annotations\n'
        source += "".join("\n" + code for code, _ in helpers)
        source += "".join(_stub(name, sig, doc) for name, sig, doc, _, _ in stubs)
        (root / "src" / "ledger" / f"{module}.py").write_text(source)
        tests = f"from ledger import {module}\n\n\n"
        tests += "\n\n".join(test for _, test in helpers)
        tests += "".join(f"\n\ndef test_{name}():\n    {t}\n" for name, _, _, _, t in stubs)
        (root / "tests" / f"test_{module}.py").write_text(tests)
    (root / "tools" / "check.py").write_text(_CHECK)
    (root / "README.md").write_text(
        "# ledger\n\nA tiny double-entry ledger. Run the tests with `python3 tools/check.py`.\n"
    )


@dataclass
class Call:
    name: str
    args: dict[str, Any]


@dataclass
class Step:
    """One model turn: optional text, then tool calls (none: the final answer)."""

    text: str = ""
    calls: list[Call] = field(default_factory=list)


def _todos(done: int) -> Call:
    items = []
    for i, module in enumerate(_STUBS):
        status = "completed" if i < done else "in_progress" if i == done else "pending"
        items.append(
            {
                "content": f"Implement the stubs in src/ledger/{module}.py",
                "status": status,
                "active_form": f"Implementing src/ledger/{module}.py",
            }
        )
    items.append(
        {
            "content": "Run the whole test suite",
            "status": "in_progress" if done == len(_STUBS) else "pending",
        }
    )
    return Call("todo_write", {"todos": items})


def _check() -> Call:
    return Call("shell", {"command": "python3 tools/check.py", "description": "Run the tests"})


def _steps() -> list[Step]:
    steps = [
        Step("I'll start by planning the work.", [_todos(0)]),
        Step("", [Call("list_files", {"path": "."})]),
        Step("", [Call("read_file", {"path": "README.md"})]),
        Step("Let me see which tests fail now.", [_check()]),
        Step("", [Call("grep_files", {"pattern": "NotImplementedError", "path": "src"})]),
    ]
    for index, (module, stubs) in enumerate(_STUBS.items()):
        path = f"src/ledger/{module}.py"
        steps.append(Step(f"Now `{path}`.", [Call("read_file", {"path": path})]))
        if index % 2 == 0:
            steps.append(Step("", [Call("read_file", {"path": f"tests/test_{module}.py"})]))
        else:
            steps.append(
                Step("", [Call("grep_files", {"pattern": f"{module}\\.", "path": "tests"})])
            )
        for name, _sig, _doc, body, _test in stubs:
            old = f'    raise NotImplementedError("{name}")'
            steps.append(
                Step("", [Call("edit_file", {"path": path, "old": old, "new": "    " + body})])
            )
        steps.append(Step("", [_check()]))
        steps.append(Step("", [_todos(index + 1)]))
    steps.append(
        Step(
            "All modules are done. Here is what changed.",
            [Call("grep_files", {"pattern": "NotImplementedError", "path": "src"})],
        )
    )
    steps.append(
        Step(
            "Implemented every stub in `src/ledger/`:\n\n"
            + "\n".join(
                f"- `{m}.py`: " + ", ".join(f"`{s[0]}`" for s in stubs)
                for m, stubs in _STUBS.items()
            )
            + "\n\n`python3 tools/check.py` passes (all tests green)."
        )
    )
    return steps


STEPS = _steps()
"""The whole session: every model turn in order (the last one answers)."""

EDITS = sum(1 for s in STEPS for c in s.calls if c.name == "edit_file")
TEST_RUNS = sum(1 for s in STEPS for c in s.calls if c.name == "shell")


def step_of(messages: list[Any]) -> int:
    """Which step a request asks for: the number of assistant turns it already carries."""
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")


def call_id(step: int, index: int, vendor: str) -> str:
    return f"{'toolu' if vendor == 'anthropic' else 'call'}_{step:02d}_{index}"


def output_tokens(step: Step) -> int:
    size = len(step.text) + sum(len(json.dumps(c.args)) for c in step.calls)
    return max(1, size // 4)


__all__ = [
    "EDITS",
    "PROMPT",
    "STEPS",
    "TEST_RUNS",
    "Call",
    "Step",
    "call_id",
    "make_project",
    "output_tokens",
    "step_of",
]
