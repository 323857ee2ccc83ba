import io
import logging
import ssl

import pytest

import lovia
from lovia import cli
from lovia.http_config import DEFAULT_TIMEOUT, resolve_timeout, resolve_trust_env, resolve_verify
from lovia.log_config import ColorFormatter, enable_logging, supports_color


def test_cli_help_version_unknown(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: lovia <command> [options]") and "--version" in out
    assert "serve" in out and "chat" in out
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"lovia {lovia.__version__}"
    assert cli.main(["frobnicate"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown command 'frobnicate'\n\nusage: lovia")


def test_cli_dispatches_lazily(monkeypatch, capsys):
    import sys
    import types

    seen = {}
    mod = types.ModuleType("fake_sub")
    mod.sub_main = lambda rest, prog: seen.update(rest=rest, prog=prog) or 7
    monkeypatch.setitem(sys.modules, "fake_sub", mod)
    monkeypatch.setitem(cli._COMMANDS, "fake", ("fake_sub", "test"))
    assert cli.main(["fake", "-x"]) == 7
    assert seen == {"rest": ["-x"], "prog": "lovia fake"}

    broken = types.ModuleType("broken_sub")
    monkeypatch.setitem(cli._COMMANDS, "broken", ("broken_sub_missing", "test"))

    # Resolved before import_module is replaced: lovia's lazy exports load through it.
    user_error = lovia.UserError

    def fail(name):
        raise user_error("extra missing", hint="pip install lovia[mcp]")

    monkeypatch.setattr(cli.importlib, "import_module", fail)
    assert cli.main(["broken"]) == 2
    assert "error: extra missing" in capsys.readouterr().err
    del broken


def test_enable_logging_is_idempotent_and_plain_without_tty():
    stream = io.StringIO()
    logger = enable_logging(logging.DEBUG, stream=stream)
    enable_logging(logging.DEBUG, stream=stream)
    managed = [h for h in logger.handlers if getattr(h, "_lovia_managed", False)]
    assert len(managed) == 1 and logger.propagate is False
    logging.getLogger("lovia.test").info("run.done: ok")
    assert "run.done: ok" in stream.getvalue() and "\033[" not in stream.getvalue()
    for h in managed:
        logger.removeHandler(h)


def test_color_formatter_restores_record():
    fmt = ColorFormatter("%(levelname)s %(name)s: %(message)s")
    record = logging.LogRecord(
        "lovia.x", logging.WARNING, __file__, 1, "tool.error: %s", ("b",), None
    )
    out = fmt.format(record)
    assert "\033[33mWARNING\033[0m" in out and "\033[1mtool.error:\033[0m b" in out
    assert (
        record.levelname == "WARNING" and record.msg == "tool.error: %s" and record.args == ("b",)
    )


def test_supports_color(monkeypatch):
    class TTY(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert supports_color(TTY()) is True
    assert supports_color(io.StringIO()) is False
    monkeypatch.setenv("NO_COLOR", "")
    assert supports_color(TTY()) is False


def test_http_config(monkeypatch, tmp_path, caplog):
    monkeypatch.delenv("LOVIA_PROVIDER_TIMEOUT", raising=False)
    assert resolve_timeout(None) == DEFAULT_TIMEOUT == 300.0 and resolve_timeout(5) == 5
    monkeypatch.setenv("LOVIA_PROVIDER_TIMEOUT", "12.5")
    assert resolve_timeout(None) == 12.5
    monkeypatch.setenv("LOVIA_PROVIDER_TIMEOUT", "-1")
    with caplog.at_level(logging.WARNING):
        assert resolve_timeout(None) == 300.0
    monkeypatch.setenv("LOVIA_PROVIDER_TRUST_ENV", " Yes ")
    assert resolve_trust_env(None) is True and resolve_trust_env(False) is False
    monkeypatch.setenv("LOVIA_HTTP_INSECURE", "1")
    assert resolve_verify() is False
    monkeypatch.delenv("LOVIA_HTTP_INSECURE")
    monkeypatch.setenv("LOVIA_HTTP_CA_BUNDLE", str(tmp_path / "missing.pem"))
    with pytest.raises(FileNotFoundError):
        resolve_verify()
    monkeypatch.delenv("LOVIA_HTTP_CA_BUNDLE")
    assert isinstance(resolve_verify(), ssl.SSLContext)


def test_all_exports_resolve():
    for name in lovia.__all__:
        assert hasattr(lovia, name), name
