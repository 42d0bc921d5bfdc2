"""Run every benchmark (or the ones named): python -m bench [ask_ai ...]."""

import importlib
import sys

ALL = ["ask_ai", "embedding", "extraction", "queue", "search"]


def main() -> None:
    for name in sys.argv[1:] or ALL:
        print(importlib.import_module(f"bench.{name}").main())
        print()


if __name__ == "__main__":
    main()
