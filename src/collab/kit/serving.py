"""Several API processes on one port: each listens on a socket of its own, under uvicorn's supervisor."""

import logging
import socket
import sys

from uvicorn.config import STARTUP_FAILURE, Config
from uvicorn.supervisors import multiprocess

logger = logging.getLogger("collab.serving")

# Linux spreads new connections over the sockets of one SO_REUSEPORT group; elsewhere the option only lets them
# share the port, so there the processes keep uvicorn's one shared socket.
SPREADS = sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def listening_socket(config: Config, *, reuse_port: bool) -> socket.socket:
    """A socket bound to the configured host and port (in an SO_REUSEPORT group where `reuse_port`)."""
    sock = socket.socket(socket.AF_INET6 if config.host and ":" in config.host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((config.host, config.port))
    except OSError as exc:
        logger.error("cannot listen on %s:%s: %s", config.host, config.port, exc)
        sock.close()
        sys.exit(STARTUP_FAILURE)
    return sock


class OwnSocketProcess(multiprocess.Process):
    """One API process, listening on its own socket in the port's SO_REUSEPORT group.

    On one shared socket the first process to wake accepts every connection waiting (uvloop accepts until none
    is left), so a burst of new connections lands on one process: 16 of 16 at times, measured, the other cores
    idle. The kernel hashes each new connection to one socket of the group instead."""

    def target(self, sockets: list[socket.socket] | None = None) -> None:
        super().target([listening_socket(self.config, reuse_port=True)])


def run(config: Config) -> None:
    """Serve `config.workers` processes of `config.app` under uvicorn's supervisor until it is stopped."""
    # A plain bind first: a port another server holds (another collab included, whose group would otherwise
    # take this one's processes in) fails here, as with one shared socket.
    probe = listening_socket(config, reuse_port=False)
    if not SPREADS:
        multiprocess.Multiprocess(config, sockets=[probe]).run()
        return
    probe.close()
    # uvicorn's supervisor makes (and remakes, for a process that died) its processes through this name.
    multiprocess.Process = OwnSocketProcess
    logger.info("serving on %s:%s from %d processes", config.host, config.port, config.workers)
    multiprocess.Multiprocess(config, sockets=[]).run()
