"""A real local Ray cluster for tests: a head node and worker nodes, each a ``ray start
--block`` process with its own CPU count and ports, under one short temporary directory.

``stop()`` ends every process the cluster started, found by its process group and by the
temporary directory in its command line, so no raylet or worker outlives a test run.

Ray enables token authentication as soon as ``~/.ray/auth_token`` exists (a local
``ray.init()`` writes one), and then a second node that does not know it cannot join. So the
cluster always runs with a token of its own, passed in the environment: to its nodes, and to
this process while the cluster runs (the driver needs it too; ``stop()`` restores the
previous values). Subprocesses started from here inherit it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
RAY = str(Path(sys.executable).with_name("ray"))

#: Set by the test when a cluster cannot start: under LOVIA_REQUIRE_ALL=1 that fails CI.
REQUIRE_ALL = os.environ.get("LOVIA_REQUIRE_ALL") == "1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RayClusterError(RuntimeError):
    pass


class LocalRayCluster:
    """``cpus`` gives one node per entry (the first is the head)."""

    def __init__(self, cpus: tuple[int, ...] = (1, 1), *, env: dict[str, str] | None = None):
        self.cpus = cpus
        self.temp_dir = Path(tempfile.mkdtemp(prefix="lr", dir="/tmp"))
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "examples")]),
            "RAY_USAGE_STATS_ENABLED": "0",
            **self.auth,
            **(env or {}),
        }
        self.env.pop("RAY_ADDRESS", None)
        self.env.pop("RAY_AUTH_TOKEN_PATH", None)
        self._saved_env: dict[str, str | None] = {}
        self.nodes: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []

    def _ports(self) -> list[str]:
        return [
            f"--node-manager-port={free_port()}",
            f"--object-manager-port={free_port()}",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--dashboard-agent-grpc-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}",
            f"--metrics-export-port={free_port()}",
        ]

    def _spawn(self, args: list[str]) -> None:
        log = self.temp_dir / f"node{len(self.nodes)}.log"
        self.logs.append(log)
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [RAY, "start", "--block", "--node-ip-address=127.0.0.1", *args, *self._ports()],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.nodes.append(proc)

    def start(self, timeout: float = 120.0) -> LocalRayCluster:
        for key, value in {**self.auth, "RAY_AUTH_TOKEN_PATH": None}.items():
            self._saved_env[key] = os.environ.get(key)
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        try:
            self._spawn(
                [
                    "--head",
                    f"--port={self.port}",
                    f"--num-cpus={self.cpus[0]}",
                    "--include-dashboard=false",
                    f"--temp-dir={self.temp_dir}",
                ]
            )
            self._wait_for_port(timeout)
            for cpus in self.cpus[1:]:
                self._spawn([f"--address={self.address}", f"--num-cpus={cpus}"])
            self.wait_for_nodes(len(self.cpus), timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_for_port(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=1),
            ):
                return
            time.sleep(0.2)
        raise RayClusterError(f"the Ray head did not listen within {timeout}s\n{self.log_tail()}")

    def _check_alive(self) -> None:
        for proc in self.nodes:
            if proc.poll() is not None:
                raise RayClusterError(f"a ray start process exited\n{self.log_tail()}")

    def alive_nodes(self) -> list[str]:
        """The ids of the nodes the cluster reports alive (asked from a separate process)."""
        script = (
            "import ray,sys; ray.init(address=sys.argv[1], log_to_driver=False);"
            "print(' '.join(n['NodeID'] for n in ray.nodes() if n['Alive']))"
        )
        out = subprocess.run(
            [sys.executable, "-c", script, self.address],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return out.stdout.split() if out.returncode == 0 else []

    def wait_for_nodes(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            if len(self.alive_nodes()) >= count:
                return
            time.sleep(0.5)
        raise RayClusterError(f"{count} Ray nodes did not come up\n{self.log_tail()}")

    def log_tail(self) -> str:
        return "\n".join(
            f"--- {log.name}\n{log.read_text(errors='replace')[-2000:]}"
            for log in self.logs
            if log.exists()
        )

    def our_pids(self) -> list[int]:
        """Every live process of this cluster: in the session of one of its ``ray start``
        processes (workers rename themselves to ``ray::IDLE``), or naming its temp dir."""
        sessions = {proc.pid for proc in self.nodes}
        marker = str(self.temp_dir).encode()
        pids: list[int] = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text()
                fields = stat[stat.rindex(")") + 2 :].split()
                if fields[0] == "Z":
                    continue
                if int(fields[3]) in sessions or marker in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
        return pids

    def stop(self) -> None:
        for proc in reversed(self.nodes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in reversed(self.nodes):
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
        for _ in range(100):
            pids = self.our_pids()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        for proc in self.nodes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env = {}

    def __enter__(self) -> LocalRayCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
