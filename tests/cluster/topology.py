"""The cluster's plumbing: one bridge, a network namespace per node, the processes run in them, and partitions.

Everything is named after this run (`cl<4 hex>`), so teardown removes only what this run made: its processes by
pid (those it started, then any left in its namespaces), its namespaces and its bridge by name.
"""

import ipaddress
import os
import random
import secrets
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

from support.faults_env import wait_for

# Where Debian installs system binaries: a PATH without its sbin folders (not root's) still finds ip and haproxy.
SYSTEM_BIN = os.pathsep.join(("/usr/sbin", "/usr/bin", "/sbin", "/bin"))


def tool(name: str) -> str | None:
    """A system binary: from PATH, else from the system's folders; None when not installed."""
    return shutil.which(name) or shutil.which(name, path=SYSTEM_BIN)


IP = tool("ip") or "ip"


def ip(*args: str, check: bool = True) -> str:
    """Run `ip ARGS` (iproute2) and return its output."""
    done = subprocess.run([IP, *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def free_subnet() -> ipaddress.IPv4Network:
    """A random private /24 that no route or address of this machine overlaps."""
    used = []
    for line in ip("-4", "route", "show", "table", "all").splitlines() + ip("-4", "-o", "addr").splitlines():
        for word in line.split():
            try:
                used.append(ipaddress.ip_network(word, strict=False))
            except ValueError:
                pass
    used = [n for n in used if n.prefixlen > 0]  # the default route overlaps everything
    for _ in range(100):
        subnet = ipaddress.ip_network(f"10.{random.randint(100, 250)}.{random.randint(0, 255)}.0/24")
        if not any(subnet.overlaps(n) for n in used):
            return subnet
    raise RuntimeError("no free private /24 for the cluster's bridge")


class Process:
    """One process in a node's namespace (its own session, output to a log file); stopped by its pid."""

    def __init__(self, node: "Node", name: str, argv: list[str], *, env: dict[str, str] | None = None,
                 user: str | None = None):
        self.node, self.name, self.argv, self.env, self.user = node, name, argv, env, user
        self.log = node.dir / f"{name}.log"
        self.popen: subprocess.Popen | None = None

    def start(self) -> "Process":
        prefix = [IP, "netns", "exec", self.node.ns]
        if self.user:
            # setpriv execs (no child process), so the pid is the server's own.
            prefix += ["setpriv", f"--reuid={self.user}", f"--regid={self.user}", "--init-groups", "--"]
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(prefix + self.argv, stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        self.node.topology.started.append(self)
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive():
            os.kill(self.pid, sig)

    def wait(self, timeout: float) -> int:
        assert self.popen is not None
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{self.name} did not exit within {timeout} s; log:\n{self.tail()}") from None

    def kill(self) -> int:
        """SIGKILL (a crash), and reap it."""
        self.signal(signal.SIGCONT)  # a frozen process dies as well, but its waiters only see it once it ran
        self.signal(signal.SIGKILL)
        return self.wait(30)

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


class Node:
    """A network namespace with one address on the cluster's bridge, and a directory for its files."""

    def __init__(self, topology: "Topology", name: str, address: str):
        self.topology, self.name, self.ip = topology, name, address
        self.ns = f"{topology.prefix}-{name}"
        self.dir = topology.root / name
        self.dir.mkdir(mode=0o755)
        self.dir.chmod(0o755)  # the Postgres nodes' server runs as another user

    def spawn(self, name: str, argv: list[str], **kw: Any) -> Process:
        return Process(self, name, argv, **kw).start()

    def run(self, argv: list[str], *, user: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 120) -> str:
        """Run a command to its end in this namespace; its output (raises with it when it fails)."""
        prefix = [IP, "netns", "exec", self.ns]
        if user:
            prefix += ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--"]
        done = subprocess.run(prefix + argv, capture_output=True, text=True, env=env, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} on {self.name} exited {done.returncode}: {done.stderr.strip()}")
        return done.stdout

    def pids(self) -> list[int]:
        """Every process in this namespace now."""
        return [int(p) for p in ip("netns", "pids", self.ns, check=False).split()]

    def crash(self) -> None:
        """Kill every process of the node at once (SIGKILL by pid): the machine is gone."""
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for process in self.topology.started:
            if process.node is self and process.popen is not None:
                process.wait(30)
        wait_for(lambda: not self.pids(), timeout=30, what=f"every process of {self.name} to end")


class Topology:
    """The bridge (the root namespace gets .1 on it, for the test driver) and the nodes on it."""

    def __init__(self, root: Path, nodes: dict[str, int]):
        self.root = root
        self.prefix = f"cl{secrets.token_hex(2)}"
        self.subnet = free_subnet()
        self.bridge = self.prefix
        self.host_ip = str(self.subnet.network_address + 1)
        self.nodes: dict[str, Node] = {}
        self.started: list[Process] = []
        self.blackholes: set[tuple[str, str]] = set()  # (namespace, address) routes this run added
        self._made_bridge = False
        try:
            ip("link", "add", self.bridge, "type", "bridge")
            self._made_bridge = True
            ip("addr", "add", f"{self.host_ip}/24", "dev", self.bridge)
            ip("link", "set", self.bridge, "up")
            for name, host in nodes.items():
                self._add(name, str(self.subnet.network_address + host))
        except BaseException:
            self.close()
            raise

    def _add(self, name: str, address: str) -> None:
        node = Node(self, name, address)
        veth = f"{self.prefix}{name}"  # at most 15 characters: cl + 4 + the node's name
        ip("netns", "add", node.ns)
        self.nodes[name] = node
        ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", node.ns)
        ip("link", "set", veth, "master", self.bridge, "up")
        ip("-n", node.ns, "addr", "add", f"{address}/24", "dev", "eth0")
        ip("-n", node.ns, "link", "set", "eth0", "up")
        ip("-n", node.ns, "link", "set", "lo", "up")

    def __getitem__(self, name: str) -> Node:
        return self.nodes[name]

    # --- partitions: blackhole routes both ways (iproute2 only; no firewall needed) ---------------------------

    def partition(self, node: Node, peers: list[Node]) -> None:
        """Cut `node` from `peers` (and them from it): packets between them are dropped, silently, both ways."""
        for a, b in [(node, p) for p in peers] + [(p, node) for p in peers]:
            ip("-n", a.ns, "route", "add", "blackhole", f"{b.ip}/32")
            self.blackholes.add((a.ns, b.ip))

    def heal(self) -> None:
        """Remove every partition."""
        for ns, address in sorted(self.blackholes):
            ip("-n", ns, "route", "del", "blackhole", f"{address}/32", check=False)
        self.blackholes.clear()

    # --- teardown ------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop what this run started (by pid), then remove its namespaces and bridge (by name)."""
        for process in reversed(self.started):
            if process.alive():
                process.signal(signal.SIGCONT)
                process.signal(signal.SIGKILL)
        for process in self.started:
            if process.popen is not None:
                try:
                    process.popen.wait(10)
                except subprocess.TimeoutExpired:
                    pass
        for node in self.nodes.values():
            for pid in node.pids():  # children left behind (a killed postmaster's backends)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for node in self.nodes.values():
            ip("netns", "del", node.ns, check=False)  # its end of the veth pair goes, so the pair does
        if self._made_bridge:
            ip("link", "del", self.bridge, check=False)
