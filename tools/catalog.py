"""The message catalogs of `course_utils` (issue 15): every learner-facing sentence the package shows, in Japanese.

    python tools/catalog.py            # extract + update + compile every domain
    python tools/catalog.py --check    # exit 1 when a catalog is out of date (what `make test` runs)
    python tools/catalog.py --domain checks    # one domain only (with or without --check)

Three gettext domains (course_utils/i18n.py chains them): `checks` holds the strings of course_utils/checks/*.py (the
exercises' verdicts, hints and questions), `questions` those of course_utils/questions/*.py (the chapters' check
questions), `course_utils` those of every other course_utils/**/*.py. For each domain:

1. extract: the English of every `_("...")`, `N_("...")` and `ngettext("...", "...", n)` in its files, the same as
   `pybabel extract --no-location --sort-output -k _ -k N_ -k ngettext:1,2`;
2. update `course_utils/locale/ja/LC_MESSAGES/<domain>.po` (the reviewed source of the translations): new English
   gets an empty msgstr to translate, English the code no longer has is dropped (printed), as
   `pybabel update --no-fuzzy-matching` (a changed sentence is a new msgid and must be translated again);
3. compile it to the `.mo` next to it (committed; `pybabel compile`).

`--check` writes nothing and fails when a msgid of the code is missing from the .po, the .po has an entry the code no
longer has, a msgstr is empty or fuzzy, a `_()` is given an f-string (its text would not be found in the catalog), or
the .mo differs from compiling the .po. The functions are imported by tests/test_catalog.py.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_file
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "course_utils"
LOCALE_DIR = PACKAGE / "locale"
LANGUAGES = ("ja",)  # English is the source: its "translation" is the msgid itself
DOMAINS = ("course_utils", "checks", "questions")
KEYWORDS = {**DEFAULT_KEYWORDS, "_": None, "N_": None, "ngettext": (1, 2)}
PROJECT = "course_utils"
# `_(f"...")`: an f-string's text is not a msgid, so it would never be translated
F_STRING_CALL = re.compile(r"""(?<![\w.])(?:_|N_|ngettext)\(\s*[rRbB]?[fF][rR]?["']""")


def sources(domain: str) -> list[Path]:
    """The Python files whose strings belong to `domain`, sorted."""
    own = {name: PACKAGE / name for name in ("checks", "questions")}  # the subpackages with a domain of their own
    if domain in own:
        return sorted(own[domain].glob("*.py"))
    if domain == "course_utils":
        return sorted(
            p
            for p in PACKAGE.rglob("*.py")
            if not any(folder in p.parents for folder in own.values()) and "locale" not in p.parts
        )
    raise ValueError(f"unknown domain {domain!r}: choose one of {', '.join(DOMAINS)}")


def po_path(domain: str, lang: str = "ja") -> Path:
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{domain}.po"


def mo_path(domain: str, lang: str = "ja") -> Path:
    return po_path(domain, lang).with_suffix(".mo")


def extract(domain: str) -> Catalog:
    """The template (.pot) of `domain`: every marked English string of its files, without locations."""
    template = Catalog(project=PROJECT, domain=domain, fuzzy=False)
    for path in sources(domain):
        for _lineno, message, _comments, context in extract_from_file("python", str(path), keywords=KEYWORDS):
            template.add(message, None, context=context)
    return template


def f_string_calls(domain: str) -> list[str]:
    """`file:line` of every `_(f"...")` in the domain's files (an f-string cannot be a msgid)."""
    found = []
    for path in sources(domain):
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if F_STRING_CALL.search(line):
                found.append(f"{path.relative_to(ROOT)}:{lineno}")
    return found


def read_catalog(path: Path) -> Catalog:
    with open(path, "rb") as f:
        return read_po(f, abort_invalid=True)


def po_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_po(out, catalog, width=76, no_location=True, sort_output=True, ignore_obsolete=True, include_previous=False)
    return out.getvalue()


def mo_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_mo(out, catalog, use_fuzzy=False)
    return out.getvalue()


def _keys(catalog: Catalog) -> set:
    return {m.id for m in catalog if m.id}


def updated(domain: str, lang: str = "ja") -> tuple[Catalog, list, list]:
    """(the .po brought up to the code, msgids added, msgids dropped). A new .po is created like `pybabel init`."""
    template = extract(domain)
    path = po_path(domain, lang)
    if path.exists():
        catalog = read_catalog(path)
        template.creation_date = catalog.creation_date  # the header changes only when the messages do
    else:
        catalog = new_catalog(domain, lang)
        catalog.creation_date = template.creation_date
        catalog.revision_date = template.creation_date
    before = _keys(catalog)
    catalog.update(template, no_fuzzy_matching=True, update_header_comment=False, update_creation_date=False)
    after = _keys(catalog)
    catalog.obsolete.clear()
    return catalog, sorted(after - before, key=str), sorted(before - after, key=str)


HEADER = """\
# {language} messages of course_utils, domain `{domain}`.
# The reviewed source of the translations (course_utils/i18n.py).
# `python tools/catalog.py` adds the code's new English and compiles
# this file to the .mo next to it. Terms: i18n/ja/glossary.yaml,
# style: i18n/ja/style.md."""


def _version() -> str:
    match = re.search(r'^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    return match.group(1) if match else "0"


def new_catalog(domain: str, lang: str = "ja") -> Catalog:
    """An empty catalog with the course's header (`pybabel init` fills it with placeholders)."""
    return Catalog(
        locale=lang,
        domain=domain,
        project=PROJECT,
        version=_version(),
        header_comment=HEADER.format(language={"ja": "Japanese"}.get(lang, lang), domain=domain),
        msgid_bugs_address="the course's issue tracker",
        last_translator="the course's translators",
        language_team="Japanese (i18n/ja/glossary.yaml)",
        fuzzy=False,
    )


def build(domain: str, lang: str = "ja", out=sys.stdout) -> int:
    """Extract, update and compile one domain; returns the number of msgids still to translate."""
    catalog, added, dropped = updated(domain, lang)
    po = po_path(domain, lang)
    po.parent.mkdir(parents=True, exist_ok=True)
    text = po_bytes(catalog)
    if not po.exists() or po.read_bytes() != text:
        po.write_bytes(text)
    # compile what was written (read back, as `pybabel compile` would)
    compiled = mo_bytes(read_catalog(po))
    mo = mo_path(domain, lang)
    if not mo.exists() or mo.read_bytes() != compiled:
        mo.write_bytes(compiled)
    todo = [m.id for m in read_catalog(po) if m.id and (not _translated(m) or m.fuzzy)]
    print(
        f"{domain} ({lang}): {len(_keys(catalog))} msgids, {len(added)} new, {len(dropped)} dropped, "
        f"{len(todo)} to translate in {po.relative_to(ROOT)}",
        file=out,
    )
    for msgid in dropped:
        print(f"  dropped (no longer in the code): {_show(msgid)}", file=out)
    for msgid in todo:
        print(f"  to translate: {_show(msgid)}", file=out)
    for where in f_string_calls(domain):
        print(f"  f-string given to _() (never translated): {where}", file=out)
    return len(todo)


def _translated(message) -> bool:
    strings = message.string if isinstance(message.string, (list, tuple)) else [message.string]
    return all(s for s in strings)


def _show(msgid) -> str:
    text = msgid[0] if isinstance(msgid, tuple) else msgid
    return repr(text if len(text) <= 90 else text[:87] + "...")


def problems(domain: str, lang: str = "ja") -> list[str]:
    """Why the catalog of `domain` is out of date (empty when it is complete and compiled)."""
    po, mo = po_path(domain, lang), mo_path(domain, lang)
    rel = po.relative_to(ROOT)
    if not po.exists():
        return [f"{rel} is missing: run `python tools/catalog.py`"]
    catalog = read_catalog(po)
    code = _keys(extract(domain))
    have = _keys(catalog)
    found = [f"{rel}: no entry for {_show(m)} (run `python tools/catalog.py`, then translate it)" for m in code - have]
    found += [f"{rel}: {_show(m)} is no longer in the code (run `python tools/catalog.py`)" for m in have - code]
    for m in catalog:
        if not m.id:
            continue
        if m.fuzzy:
            found.append(f"{rel}: {_show(m.id)} is marked fuzzy: check the translation and remove the flag")
        elif not _translated(m):
            found.append(f"{rel}: {_show(m.id)} has no translation")
    found += [f"{where}: an f-string given to _() is never translated" for where in f_string_calls(domain)]
    if not mo.exists():
        found.append(f"{mo.relative_to(ROOT)} is missing: run `python tools/catalog.py`")
    elif mo.read_bytes() != mo_bytes(catalog):
        found.append(f"{mo.relative_to(ROOT)} differs from compiling {rel}: run `python tools/catalog.py`")
    return sorted(found)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a catalog is out of date")
    parser.add_argument("--domain", choices=DOMAINS, action="append", help="only this domain (default: all)")
    args = parser.parse_args(argv)
    domains = args.domain or list(DOMAINS)
    if args.check:
        found = [p for d in domains for lang in LANGUAGES for p in problems(d, lang)]
        for p in found:
            print(p)
        if not found:
            print(f"catalogs up to date: {', '.join(domains)}")
        return 1 if found else 0
    todo = sum(build(d, lang) for d in domains for lang in LANGUAGES)
    return 1 if todo else 0


if __name__ == "__main__":
    sys.exit(main())
