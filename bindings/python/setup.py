"""Builds the package with the Rust library, the drop-in and the command inside it.

setuptools-rust runs cargo on three crates and puts what they build in the ``leveldb_bloom``
package, side by side:

- ``libleveldb_bloom.so``, the C library (``clib``, a plain ``cdylib``: no Python binding,
  ctypes loads it);
- ``libleveldb_bloom_dropin.so``, the drop-in (``dropin``), which ``leveldb-bloom run``
  preloads into a program;
- ``leveldb-bloom``, the command (``cli``), built without its ``upgrade`` feature so that
  it links no LevelDB. The ``leveldb-bloom`` console script (``_leveldb_bloom_command``)
  executes it, as the ``cmake`` and ``ninja`` packages do with theirs: the command finds the
  drop-in beside itself.

The crates are the repository's (``../../<crate>/Cargo.toml``) when building from a
checkout, and the copies under ``rust/`` when building from an sdist, which carries their
sources because a source distribution cannot refer to files outside itself.

Nothing built depends on the Python version, so the wheel is tagged ``py3-none-<platform>``.
"""

from __future__ import annotations

import os
import re
import shutil

from setuptools import setup
from setuptools.command.sdist import sdist
from setuptools_rust import Binding, RustExtension
from setuptools_rust.build import build_rust

try:  # setuptools >= 70.1 ships its own bdist_wheel
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # older setuptools: the wheel package's
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
SDIST_CRATE = "rust"
# What building the library needs: the Rust library, the C API crate and the C library's
# (their tests, the benches and the other workspace members stay out).
CRATE_FILES = [
    "Cargo.toml",
    "Cargo.lock",
    "build.rs",
    "README.md",
    "src",
    "capi/Cargo.toml",
    "capi/build.rs",
    "capi/cbindgen.toml",
    "capi/src",
    "clib/Cargo.toml",
    "clib/lib.rs",
    "include/leveldb_bloom.h",
    "dropin/Cargo.toml",
    "dropin/build.rs",
    "dropin/src",
    # The statistics file's schema, which the drop-in writes and the command reads.
    "dropin/statistics/Cargo.toml",
    "dropin/statistics/src",
    "cli/Cargo.toml",
    "cli/src",
    # An optional dependency of the command's (its `upgrade` feature, off here): cargo
    # reads its manifest to resolve the workspace, and builds nothing of it.
    "leveldb-sys/Cargo.toml",
    "leveldb-sys/build.rs",
    "leveldb-sys/src",
]
# The sdist's crates, as the packages cargo knows them by.
SDIST_PACKAGES = {
    "leveldb-bloom",
    "leveldb-bloom-capi",
    "leveldb-bloom-clib",
    "leveldb-bloom-dropin",
    "leveldb-bloom-dropin-statistics",
    "leveldb-bloom-cli",
    "leveldb-sys",
}
# The workspace of the sdist's crates.
SDIST_MEMBERS = '[workspace]\nmembers = ["capi", "clib", "dropin", "cli"]\n\n'


def crate_manifest(crate: str) -> str:
    """The Cargo.toml of ``crate`` (a folder of the workspace), relative to this directory."""
    if os.path.exists(os.path.join(HERE, SDIST_CRATE, "Cargo.toml")):
        return os.path.join(SDIST_CRATE, crate, "Cargo.toml")
    return os.path.join("..", "..", crate, "Cargo.toml")


def standalone_manifest(text: str) -> str:
    """A Cargo.toml without the tables that name what an sdist does not carry (benches,
    dev-dependencies, the profiles of other packages); the root's ``[workspace]`` becomes
    the workspace of the sdist's crates."""
    kept, skipping = [], False
    for line in text.splitlines(keepends=True):
        header = re.match(r"\s*\[\[?([^\]]+)\]\]?\s*$", line)
        if header:
            name = header.group(1).strip()
            skipping = name in ("workspace", "bench", "dev-dependencies") or (
                name.startswith("profile.dev.package.")
                and name[len("profile.dev.package.") :] not in SDIST_PACKAGES
            )
            if name == "workspace":
                kept.append(SDIST_MEMBERS)
        if not skipping:
            kept.append(line)
    return "".join(kept)


class SdistWithCrate(sdist):
    """An sdist that carries the crate's sources under rust/."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        target = os.path.join(base_dir, SDIST_CRATE)
        if not os.path.exists(os.path.join(REPO, "Cargo.toml")):
            # An sdist made from an unpacked sdist: pass its crate on.
            shutil.copytree(os.path.join(HERE, SDIST_CRATE), target, dirs_exist_ok=True)
            return
        os.makedirs(target, exist_ok=True)
        for name in CRATE_FILES:
            source = os.path.join(REPO, name)
            os.makedirs(os.path.dirname(os.path.join(target, name)), exist_ok=True)
            if os.path.isdir(source):
                shutil.copytree(source, os.path.join(target, name), dirs_exist_ok=True)
            elif name.endswith("Cargo.toml"):
                with open(source, encoding="utf-8") as f:
                    text = standalone_manifest(f.read())
                with open(os.path.join(target, name), "w", encoding="utf-8") as f:
                    f.write(text)
            else:
                shutil.copy2(source, os.path.join(target, name))


class BuildRustPlainName(build_rust):
    """Puts each library in the package under its own name (``libleveldb_bloom.so``,
    ``libleveldb_bloom_dropin.so``): C libraries that ctypes loads or a program preloads,
    not Python extensions, so their names carry no Python version or ABI tag."""

    def get_dylib_ext_path(self, ext, target_fname):
        path = super().get_dylib_ext_path(ext, target_fname)
        return os.path.join(os.path.dirname(path), target_fname.split(".")[-1] + ".so")


class BdistWheelAnyPython(bdist_wheel):
    """A wheel for any Python 3 on this platform: ctypes loads a plain C library."""

    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(
    rust_extensions=[
        RustExtension(
            "leveldb_bloom.libleveldb_bloom",
            path=crate_manifest("clib"),
            binding=Binding.NoBinding,
        ),
        RustExtension(
            "leveldb_bloom.libleveldb_bloom_dropin",
            path=crate_manifest("dropin"),
            binding=Binding.NoBinding,
        ),
        RustExtension(
            {"leveldb-bloom": "leveldb_bloom.leveldb-bloom"},
            path=crate_manifest("cli"),
            binding=Binding.Exec,
            args=["--no-default-features"],
        ),
    ],
    cmdclass={
        "sdist": SdistWithCrate,
        "build_rust": BuildRustPlainName,
        "bdist_wheel": BdistWheelAnyPython,
    },
    zip_safe=False,
)
