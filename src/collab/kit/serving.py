"""Several API processes on one port: each listens on a socket of its own, under a small supervisor of ours (public
uvicorn only: `uvicorn.Server.run(sockets=...)`)."""

import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading

from uvicorn.config import STARTUP_FAILURE, Config
from uvicorn.supervisors import Multiprocess

from collab.kit.drain import DrainingServer

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


def _serve(config: Config, drain_s: float = 0.0) -> None:
    """One API process, listening on its own socket in the port's SO_REUSEPORT group.

    On one shared socket the first process to wake accepts every connection waiting (uvloop accepts until none
    is left), so a burst of new connections lands on one process: 16 of 16 at times, measured, the other cores
    idle. The kernel hashes each new connection to one socket of the group instead."""
    config.configure_logging()
    try:
        DrainingServer(config, drain_s=drain_s).run(sockets=[listening_socket(config, reuse_port=True)])
    except KeyboardInterrupt:
        pass  # uvicorn raises the SIGINT it served again once it has stopped: a finished process, not a crash


def run(config: Config, *, drain_s: float = 0.0) -> None:
    """Serve `config.workers` processes of `config.app` until SIGINT or SIGTERM: each on a socket of its own where
    the kernel spreads connections over them (Linux), else under uvicorn's supervisor on one shared socket. On
    SIGTERM each process drains for `drain_s` first (kit/drain.py)."""
    # A plain bind first: a port another server holds (another collab included, whose group would otherwise
    # take this one's processes in) fails here, as with one shared socket.
    probe = listening_socket(config, reuse_port=False)
    if not SPREADS:
        Multiprocess(config, sockets=[probe]).run()
        return
    probe.close()
    logger.info("serving on %s:%s from %d processes", config.host, config.port, config.workers)
    spawn = multiprocessing.get_context("spawn")
    stop = threading.Event()
    received = [signal.SIGTERM]  # the signal each process is sent on: SIGTERM drains, Ctrl-C (SIGINT) does not

    def stopping(signum: int, _frame: object) -> None:
        received[0] = signal.Signals(signum)
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stopping)
    processes = [spawn.Process(target=_serve, args=(config, drain_s), daemon=True) for _ in range(config.workers)]
    for process in processes:
        process.start()
    while not stop.wait(0.5):
        for i, process in enumerate(processes):
            if not process.is_alive():  # one that died is replaced, as uvicorn's supervisor does
                logger.warning("API process %s exited with %s; starting another", process.pid, process.exitcode)
                processes[i] = spawn.Process(target=_serve, args=(config, drain_s), daemon=True)
                processes[i].start()
    for process in processes:
        if process.pid is not None:
            os.kill(process.pid, received[0])  # as this supervisor was stopped: SIGTERM drains first
    for process in processes:
        process.join(drain_s + (config.timeout_graceful_shutdown or 30))
        if process.is_alive():
            process.kill()
