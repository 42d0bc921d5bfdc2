"""Child process that decodes a text, Markdown, CSV or TSV checklist under memory and CPU limits.

Reads the file from stdin; argv: mime_type memory_bytes cpu_seconds limits_json. Writes one JSON object to
stdout: {"ok": true, "decoded": {tasks, skipped, canonical_text, meta}} or {"ok": false, "kind": ..., "message": ...}.
Run as a plain script (python -I _decode_child.py): it puts the directory holding the collab package first on
sys.path, so the child runs the very code of its parent, and imports everything before capping memory.
"""

import json
import sys
from pathlib import Path


def main() -> None:
    """Import the decoders, apply the limits, decode stdin, print the verdict."""
    mime, memory_bytes, cpu_seconds, limits_json = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from collab.files.common import DecodeError, Limits
    from collab.files.decode import decode_here
    from collab.files.sandbox import cap_resources, decoded_to_json

    limits = Limits(**json.loads(limits_json))
    cap_resources(memory_bytes=memory_bytes, cpu_seconds=cpu_seconds)
    data = sys.stdin.buffer.read()
    try:
        decoded = decode_here(data, mime, limits=limits)
        output = json.dumps({"ok": True, "decoded": decoded_to_json(decoded)})
    except DecodeError as exc:
        output = json.dumps({"ok": False, "kind": exc.kind, "message": exc.message})
    except MemoryError:
        output = json.dumps({"ok": False, "kind": "limits", "message": "the file needs too much memory to decode"})
    sys.stdout.write(output)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
