"""The floor plan of src/collab (README "Layout"): every import between top-level parts goes down the ladder.

Imports inside functions count too. A part may import any part on a lower floor, and on its own floor only
the parts listed before it; so there is no cycle, the worker never loads the HTTP app, and no product part
imports the test harness (it is the last part of the top floor).
"""

import ast
import subprocess
import sys
from pathlib import Path

import collab

SRC = Path(collab.__file__).parent

# Bottom to top. A new part goes on the floor whose parts it needs below it (and into the README's picture).
FLOORS = [
    ("config", "logging", "prompts", "files", "localmodel"),  # foundation: no domain knowledge
    ("kit", ),  # envelope, errors, auth, db, jobs, Services
    ("events", "features", "llm", "embeddings"),  # shared wire types, per-document tables, model clients
    ("workspaces", "webhooks"),  # per-key settings, outbound events
    ("organizations", "documents", "presence", "recordings", "crdt"),  # the tenancy tree and per-document data
    ("permissions", ),  # grants, effective access, user tokens
    ("notifications", "activities", "comments", "locations", "realtime"),  # feeds about documents; live rooms over them
    ("judgments", "extraction", "knowledge", "ask_ai", "agents", "insights", "memory"),  # derived knowledge and AI
    ("users", ),  # people, groups, and deleting a user's data from every feature
    ("health", "worker", "api", "console", "app", "cli", "testing")  # entry points; the test harness last
]
RANK = {part: i for i, part in enumerate(p for floor in FLOORS for p in floor)}
FLOOR = {part: n for n, floor in enumerate(FLOORS) for part in floor}


def _parts(root: Path) -> set[str]:
    return {
        p.stem if p.suffix == ".py" else p.name
        for p in root.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())
    }


def _imported(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, collab.module) for every import in the file, top-level or inside a function."""
    package = ["collab", *path.relative_to(root).parent.parts]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found += [(node.lineno, f"{module}.{a.name}") for a in node.names]
    return [(line, m) for line, m in found if m.startswith("collab.")]


def upward_imports(root: Path) -> list[str]:
    """Every import of a part that is not below the importer on the ladder (empty when the plan holds)."""
    parts = _parts(root)
    unplaced = sorted(parts - set(RANK))
    if unplaced:
        return [f"not on the ladder: {p}" for p in unplaced]
    wrong = []
    for path in sorted(root.rglob("*.py")):
        me = path.relative_to(root).parts[0].removesuffix(".py")
        for line, module in _imported(path, root):
            other = module.split(".")[1]
            if other in parts and other != me and RANK[other] > RANK[me]:
                wrong.append(f"{path.relative_to(root)}:{line} imports {module} ({me} is below {other})")
    return wrong


def test_every_import_goes_down_the_ladder():
    assert upward_imports(SRC) == []


def test_worker_loads_no_http_app_and_fake_eval_runs_without_the_harness(tmp_path):
    """In a fresh process: the worker module loads no app, api or routes; `collab eval extraction --provider
    fake` scores a fixture with the stand-in model from collab.llm.fake, and collab.testing is never loaded."""
    from collab.extraction import evaluate

    for path in evaluate.FIXTURES.glob("editorial_review.*"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    code = f"""
import sys
from pathlib import Path
import collab.worker
print(sorted(m for m in sys.modules if m in ("collab.app", "collab.api") or m.endswith(".routes")))
from collab.extraction import evaluate
assert evaluate.main(provider="fake", mode="live", fixtures=Path({str(tmp_path)!r})) == 0
print(sorted(m for m in sys.modules if m.startswith("collab.testing")))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert lines[0] == "[]"  # no HTTP app in the worker
    assert "| editorial_review.txt |" in run.stdout and "| yes |" in run.stdout
    assert lines[-1] == "[]"  # the stand-in model is product code
