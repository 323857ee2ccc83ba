from __future__ import annotations

from lovia_server.settings import DEFAULT_DENIED_PATHS, parse_settings


def test_null_denied_paths_keeps_the_defaults_and_the_other_permission_settings():
    # VS Code sends the setting's default, null, with the rest of the lovia section.
    settings, problems = parse_settings(
        {
            "permissions": {
                "preset": "coding",
                "deniedPaths": None,
                "pathRules": [{"pattern": "README.md", "write": "ask"}],
            }
        }
    )
    assert problems == []
    assert settings.permissions.deniedPaths == list(DEFAULT_DENIED_PATHS)
    assert [r.pattern for r in settings.permissions.pathRules] == ["README.md"]


def test_a_wrong_type_for_denied_paths_is_still_reported():
    _, problems = parse_settings({"permissions": {"deniedPaths": "secrets/**"}})
    assert any("deniedPaths" in p for p in problems)
