"""Every lovia/* method is served by exactly one route, in the protocol's order."""

from lovia_server import protocol as p
from lovia_server.server import ROUTES


def test_every_method_has_one_route():
    assert [route.method for route in ROUTES] == list(p.METHOD_TABLE)


def test_every_method_has_an_execute_command_alias():
    assert [m.command for m in p.METHOD_TABLE] == [n.replace("/", ".", 1) for n in p.METHODS]
    assert p.DELETE_SESSION.command == "lovia.deleteSession"
