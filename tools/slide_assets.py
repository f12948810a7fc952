"""Put pinned copies of reveal.js, MathJax, require.js and jQuery next to the slide decks, for rooms without internet.

    python tools/slide_assets.py artifacts/slides/assets
    python tools/slide_assets.py --flags assets        (the nbconvert options for decks next to that folder)

reads tools/slide_assets.lock.json (npm registry tarballs with their sha512 integrity, like a package-lock.json),
downloads each tarball once into a cache (artifacts/.cache/slide-assets/ by default), refuses one whose hash
differs from the lock, and unpacks the paths the decks use into <target>/<package>/. A second run with the same
lock does nothing. Only Python is needed: no Node, no npm.

`offline_flags(prefix)` are the nbconvert options that point a deck at those copies (tools/slides.py, which
`make slides` and tests/test_slides.py run, uses them): the prefix is the assets folder relative to the deck's own
folder.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shlex
import shutil
import sys
import tarfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "tools" / "slide_assets.lock.json"
CACHE = ROOT / "artifacts" / ".cache" / "slide-assets"


def offline_flags(prefix: str) -> list:
    """nbconvert options for a deck whose assets folder is at `prefix` (relative to the deck's folder)."""
    return [
        f"--TemplateExporter.extra_template_basedirs={ROOT / 'tools' / 'slide_template'}",
        "--template=offline_reveal",
        f"--SlidesExporter.reveal_url_prefix={prefix}/reveal.js",
        "--SlidesExporter.reveal_theme=white",  # "simple", nbconvert's default, imports its fonts from Google
        f"--SlidesExporter.mathjax_url={prefix}/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
        f"--SlidesExporter.require_js_url={prefix}/requirejs/require.js",
        f"--SlidesExporter.jquery_url={prefix}/jquery/dist/jquery.min.js",
    ]


def lock() -> dict:
    return json.loads(LOCK.read_text())["packages"]


def _verified(data: bytes, integrity: str, name: str) -> bytes:
    algorithm, expected = integrity.split("-", 1)
    digest = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
    if digest != expected:
        raise ValueError(f"{name}: the tarball's {algorithm} is {digest}, the lock says {expected}")
    return data


def tarball(name: str, spec: dict, cache: Path = CACHE) -> bytes:
    """The package's tarball, from the cache or the npm registry, checked against the lock's integrity."""
    path = cache / f"{name}-{spec['version']}.tgz"
    if path.exists():
        return _verified(path.read_bytes(), spec["integrity"], name)
    with urllib.request.urlopen(spec["tarball"], timeout=120) as response:
        data = _verified(response.read(), spec["integrity"], name)
    cache.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def install(target: Path, cache: Path = CACHE, only=None) -> list:
    """Unpack every locked package (or those named in `only`: the website needs MathJax alone) into target/<name>/
    (skipped when target/<name>/.version matches)."""
    target = Path(target)
    done = []
    for name, spec in lock().items():
        if only is not None and name not in only:
            continue
        dest = target / name
        stamp = dest / ".version"
        if stamp.exists() and stamp.read_text() == spec["integrity"]:
            continue
        shutil.rmtree(dest, ignore_errors=True)
        with tarfile.open(fileobj=io.BytesIO(tarball(name, spec, cache)), mode="r:gz") as tar:
            for member in tar.getmembers():
                rel = member.name.split("/", 1)[1] if "/" in member.name else ""  # npm tarballs hold package/...
                if not member.isfile() or not any(rel == k or rel.startswith(k + "/") for k in spec["keep"]):
                    continue
                out = dest / rel
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(tar.extractfile(member).read())
        stamp.write_text(spec["integrity"])
        done.append(f"{name} {spec['version']}")
    return done


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "--flags":  # for a shell: the options, quoted
        print(shlex.join(offline_flags(args[1])))
        return 0
    if len(args) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    installed = install(Path(args[0]))
    print("slide assets: " + (", ".join(installed) if installed else "up to date") + f" in {args[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
