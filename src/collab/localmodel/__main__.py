"""`python -m collab.localmodel`: serve one local model over OpenAI-compatible HTTP on loopback.

Once the model is loaded it prints one line, `collab-localmodel listening on http://HOST:PORT`, to stdout (with
`--port 0` the port is a free one), so that a parent process can read the URL. Exits 2 with one line on stderr when
the runtime has no wheel for this platform or the weights are not installed.
"""

import argparse
import os
import sys
from pathlib import Path

from collab.localmodel import models


def _cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    from collab.localmodel.server import default_threads

    parser = argparse.ArgumentParser(prog="python -m collab.localmodel", description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help=f"one of: {', '.join(sorted(models.MODELS))}")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on; 0 (default): a free one")
    parser.add_argument("--threads", type=int, default=default_threads(),
                        help="generation threads, at most the cores (default: min(2, cores))")
    parser.add_argument("--queue", type=int, default=4,
                        help="requests that may wait while one generates; beyond, 503 (default: 4)")
    parser.add_argument("--max-tokens", type=int, default=512, help="cap on one answer's tokens (default: 512)")
    parser.add_argument("--timeout-s", type=float, default=120.0,
                        help="seconds one generation may run; then it ends with finish_reason length (default: 120)")
    parser.add_argument("--models-dir", type=Path, default=_cache() / "collab" / "models",
                        help="where split weights are assembled once (default: ~/.cache/collab/models)")
    parser.add_argument("--nice", type=int, default=10, help="priority decrement at start; 0: none (default: 10)")
    args = parser.parse_args(argv)
    for flag in ("threads", "max_tokens"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    if args.queue < 0 or args.timeout_s <= 0 or args.nice < 0:
        parser.error("--queue and --nice must be at least 0, --timeout-s more than 0")
    return args


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGINT or SIGTERM; 2 when the model cannot run here."""
    args = parse(argv)
    from collab.localmodel.server import serve

    try:
        serve(args.model, host=args.host, port=args.port, threads=args.threads, queue=args.queue,
              max_tokens=args.max_tokens, timeout_s=args.timeout_s, models_dir=args.models_dir, nice=args.nice)
    except models.Unavailable as exc:
        print(exc, file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
