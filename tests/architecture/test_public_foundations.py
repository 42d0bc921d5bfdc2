"""Public foundations (issue #35): no `_`-prefixed name of the libraries the request path and jobs stand on is
imported, called or overridden in src/. A walk of the AST; the uses not yet replaced are listed below, so a new one
fails here and a replaced one must leave the list."""

import ast
import inspect
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "collab"
LIBRARIES = {"fastapi", "starlette", "pydantic", "psycopg", "psycopg_pool", "arq", "uvicorn", "redis"}
NOT_YET: set[tuple[str, str]] = set()  # none left; a name listed here would be allowed until replaced


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _uses(path: Path) -> set[str]:
    """The private names of LIBRARIES that one module imports, or that its subclasses of their classes override or
    call on `self` without defining them."""
    tree = ast.parse(path.read_text(), str(path))
    found, imported = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in LIBRARIES:
            imported.update(a.asname or a.name for a in node.names)
            for alias in node.names:
                if _private(alias.name) or any(_private(part) for part in node.module.split(".")):
                    found.add(f"import {node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in LIBRARIES:
                    imported.add(alias.asname or alias.name.split(".")[0])
                    if any(_private(p) for p in alias.name.split(".")):
                        found.add(f"import {alias.name}")
        elif (isinstance(node, ast.Attribute) and _private(node.attr) and not _is_self_or_super(node.value)
              and node.attr not in OURS):
            found.add(f"uses .{node.attr}")  # read off an object the project did not make (a route, a pool)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) > 1
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and _private(node.args[1].value) and node.args[1].value not in OURS):
            found.add(f"{node.func.id} {node.args[1].value}")
    for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
        if not any(_root(b) in imported for b in cls.bases):
            continue
        own = {f.name for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        own |= {
            t.attr
            for n in ast.walk(cls) if isinstance(n, (ast.Assign, ast.AnnAssign))
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
        }
        for name in own:
            if _private(name) and _defined_by_base(name):
                found.add(f"{cls.name} overrides {name}")
        called = {id(n.func) for n in ast.walk(cls) if isinstance(n, ast.Call)}
        for n in ast.walk(cls):
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and _private(n.func.attr)
                    and isinstance(n.func.value, (ast.Name, ast.Call)) and _is_self_or_super(n.func.value)
                    and (n.func.attr not in own or _is_super(n.func.value))):
                found.add(f"{cls.name} calls self.{n.func.attr}")
            elif (isinstance(n, ast.Attribute) and id(n) not in called and isinstance(n.ctx, ast.Load)
                  and _private(n.attr) and _is_self_or_super(n.value) and n.attr not in own
                  and _defined_by_base(n.attr)):
                found.add(f"{cls.name} reads self.{n.attr}")
    return found


def _root(node: ast.AST) -> str | None:
    """The name an expression like `a.b.C` starts from."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _defined_here() -> set[str]:
    """Every name the project defines: functions, classes, and attributes it assigns."""
    names = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
    return names


OURS = _defined_here()


def _is_super(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _is_self_or_super(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "self") or _is_super(node)


def _defined_by_base(name: str) -> bool:
    """Whether a class of LIBRARIES the project subclasses defines `name`, as a class attribute or one it sets on
    its instances (arq's Worker, psycopg's and psycopg_pool's connection classes, redis-py's pool, FastAPI's and
    Starlette's routes, requests and responses)."""
    return any(hasattr(base, name) or re.search(rf"self\.{re.escape(name)}\b", source) for base, source in _BASES)


def _bases() -> list[tuple[type, str]]:
    from arq.worker import Worker
    from fastapi.routing import APIRoute
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool
    from redis.asyncio import ConnectionPool
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    classes = (Worker, APIRoute, AsyncConnection, AsyncConnectionPool, ConnectionPool, Request, JSONResponse)
    return [(c, "".join(_source(k) for k in c.__mro__ if k.__module__.split(".")[0] in LIBRARIES)) for c in classes]


def _source(cls: type) -> str:
    try:
        return inspect.getsource(cls)
    except (OSError, TypeError):  # compiled (psycopg's C parts): its class attributes are all there is to see
        return ""


_BASES = _bases()


def test_no_private_name_of_the_foundations():
    found = {(str(path.relative_to(SRC)), use) for path in SRC.rglob("*.py") for use in _uses(path)}
    assert found - NOT_YET == set(), "private names of the libraries in src/: use their public API"
    assert NOT_YET - found == set(), "replaced: take them off NOT_YET"


def test_the_walk_finds_each_kind_of_use(tmp_path):
    # The shapes the request path, the pool and the worker once used.
    module = tmp_path / "sample.py"
    module.write_text("import fastapi.routing\n"
                      "from fastapi.routing import _update_scope\n"
                      "from arq.worker import Worker\n"
                      "class Lane(Worker):\n"
                      "    async def _poll_iteration(self):\n"
                      "        await self._cancel_aborted_jobs()\n"
                      "def handler(route, conn):\n"
                      "    var = getattr(fastapi.routing, '_effective_route_context_var', None)\n"
                      "    return route._embed_body_fields, conn._pipeline, var\n")
    assert _uses(module) == {
        "import fastapi.routing._update_scope", "Lane overrides _poll_iteration",
        "Lane calls self._cancel_aborted_jobs", "getattr _effective_route_context_var", "uses ._embed_body_fields",
        "uses ._pipeline"
    }
    module.write_text("from arq.worker import Worker\nclass Lane(Worker):\n    def main(self):\n"
                      "        return self._pool, self.pool\n")
    assert _uses(module) == {"Lane reads self._pool"}
