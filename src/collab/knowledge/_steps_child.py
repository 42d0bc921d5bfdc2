"""Child process that runs the pure steps of a knowledge ingest or update over a source's markdown (its chunks, its
candidate rule lines and how many list lines it has) under memory and CPU limits, so that no tenant text can hold
the worker's event loop (and every lane of that process) for long.

Reads one JSON object from stdin: {"markdown": str, "max_chars": int, "max_chunks": int, "chunks": bool}; argv:
memory_bytes cpu_seconds. Writes one JSON object to stdout: {"chunks": [str], "candidates": [[text, category]],
"items": int}. Run as a plain script (python -I _steps_child.py): it puts the directory holding the collab package
first on sys.path, so the child runs the very code of its parent, and imports everything before capping memory.
"""

import json
import sys
from pathlib import Path


def main() -> None:
    """Import the steps, apply the limits, run them over stdin's markdown, print their outcome."""
    memory_bytes, cpu_seconds = int(sys.argv[1]), int(sys.argv[2])
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from collab.files.sandbox import cap_resources
    from collab.knowledge import pipeline

    cap_resources(memory_bytes=memory_bytes, cpu_seconds=cpu_seconds)
    request = json.loads(sys.stdin.buffer.read())
    markdown = request["markdown"]
    found, items = pipeline.candidates(markdown)
    chunks = pipeline.chunks(markdown, max_chars=request["max_chars"],
                             max_chunks=request["max_chunks"]) if request["chunks"] else []
    sys.stdout.write(json.dumps({"chunks": chunks, "candidates": [[c.text, c.category] for c in found],
                                 "items": items}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
