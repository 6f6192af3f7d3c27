"""No shared library Magneton ships exports the C++ runtime's own code.

A toolchain that links libstdc++ statically into a shared library exports its
copy unless told not to; on the H200 device machine libmagneton.so exported
std::locale's internals, and `import torch` after `import magneton` aborted
(free(): invalid pointer) when torch's std::stringstream destroyed its locale
with our copy. The link option in CMakeLists.txt keeps such a copy private.
The checker is tested on a library built here with a static libstdc++, with
and without that option, so it is known to see what it looks for."""

import pathlib
import re
import shutil
import subprocess

import pytest

import magneton

# Non-inline definitions that only the runtime's own objects hold (templates
# instantiated in our code are weak and harmless; these are not).
RUNTIME_SYMBOL = re.compile(r"^(_ZNSt6locale|_ZNSt8ios_base4Init|__cxa_throw$|__cxa_allocate_exception$|_Unwind_RaiseException$)")

def exclude_option():
    """The link option as CMakeLists.txt gives it to every target."""
    cmake = (pathlib.Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
    archives = re.search(r'set\(MAGNETON_PRIVATE_RUNTIME_ARCHIVES "([^"]+)"\)', cmake)
    assert archives, "CMakeLists.txt no longer sets MAGNETON_PRIVATE_RUNTIME_ARCHIVES"
    return "-Wl,--exclude-libs," + archives.group(1)


def exported_runtime_symbols(path):
    out = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True, text=True, check=True).stdout
    return sorted({line.split()[-1] for line in out.splitlines() if RUNTIME_SYMBOL.match(line.split()[-1])})


def needs_tools():
    for tool in ("nm", "g++"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")


def test_the_checker_sees_a_static_runtime_and_the_link_option_hides_it(tmp_path):
    needs_tools()
    src = tmp_path / "lib.cc"
    src.write_text('#include <sstream>\nextern "C" int f(int x) { std::stringstream s; s << x; return (int)s.str().size(); }\n')
    static = tmp_path / "libstatic.so"
    hidden = tmp_path / "libhidden.so"
    base = ["g++", "-O1", "-shared", "-fPIC", "-static-libstdc++", str(src)]
    subprocess.run(base + ["-o", str(static)], check=True)
    subprocess.run(base + [exclude_option(), "-o", str(hidden)], check=True)
    assert any(s.startswith("_ZNSt6locale") for s in exported_runtime_symbols(static))
    assert exported_runtime_symbols(hidden) == []


def test_magnetons_shared_libraries_export_no_runtime_code():
    needs_tools()
    package = pathlib.Path(magneton.__file__).parent
    libraries = sorted(package.glob("*.so"))
    assert any(p.name == "libmagneton.so" for p in libraries), f"no libmagneton.so in {package}"
    exported = {p.name: exported_runtime_symbols(p) for p in libraries}
    assert {name: syms for name, syms in exported.items() if syms} == {}
