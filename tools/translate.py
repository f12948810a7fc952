"""The Japanese edition, generated from the English source and reviewable translation files.

    python tools/translate.py build      # write ja/ (notebooks, exercises, instructor pages, grading) and README.ja.md
    python tools/translate.py check      # exit 1 on a missing, stale or inconsistent translation, or an outdated ja/
    python tools/translate.py todo DOC   # what DOC (e.g. chapters/01_layernorm_by_hand.ipynb) still needs, with the
                                         # English text and the hash to paste (DOC may also be its .yaml file)
    python tools/translate.py stats      # translated cells, sections and strings, per document

One translation file per English document, `i18n/ja/<its path>.yaml` (chapters/01_x.ipynb -> i18n/ja/chapters/01_x.yaml,
README.md -> i18n/ja/README.yaml). Each key names one unit of the English document:

* a notebook's cell, by its cell id. A Markdown cell is translated whole:

        ch01-02:
          en: 3f2a9c1b7d0e        # the first 12 hex digits of the SHA-256 of the English this was made from
          ja: |-
            ## 1. 四つの数を手で計算する
            ...

  A code cell keeps its code; only fragments of its string literals that people read (quiz texts, printed labels,
  figure titles and axis labels) are replaced, each English fragment exactly as it is written in the source:

        ch01-05:
          en: 9f8e7d6c5b4a        # here: the hash of the cell's string literals, so editing code alone keeps it fresh
          strings:
            "mean of the result: ": "結果の平均: "

  Every code cell with a string that reads like prose needs an entry, with `strings: {}` when nothing in it is for
  people (the entry records that someone looked).
* a Markdown page's section, by the slug of its heading (`learning-goals`; `top` for the text before the first
  heading; `-2`, `-3` for repeated headings), translated whole like a Markdown cell.

`check` fails when the English changed after it was translated (stale: the hash differs), when a unit has no
translation (missing), when a key names no unit (orphan), and when a translation's numbers, inline code, formulas,
code blocks or link targets differ from the English unit's (`exempt: <reason>` on an entry lifts this last check for
it, and the reason is listed by `stats`), or when it uses a form the glossary forbids (i18n/ja/glossary.yaml).
A fenced block of shell or Python code must match the English except its `#` comments, which are translated; a
fenced block without a language (a board drawing, a file tree) is translated like prose and keeps its numbers,
inline code and names with an underscore or a slash.

Generated (never edit them): ja/chapters, ja/solutions, ja/exercises (from ja/solutions, by the exercise
generator), ja/instructor, ja/docs/grading.md and README.ja.md. Relative links are rewritten to the Japanese
counterpart when there is one (chapters/x.ipynb -> ja/chapters/x.ipynb, README.md -> README.ja.md), otherwise to
the English file. `ja/.course_lang` makes the kernels of ja/ notebooks speak Japanese (course_utils/i18n.py).
Outputs of cells whose source did not change are kept; `make execute NB=ja/...` stores fresh ones.
"""

from __future__ import annotations

import copy
import hashlib
import io
import os
import re
import sys
import tokenize
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
LANG = "ja"
I18N = ROOT / "i18n" / LANG
EDITION = ROOT / LANG
GLOSSARY = I18N / "glossary.yaml"

sys.path.insert(0, str(ROOT))
from course_utils import exercises, learner_work, nbtools  # noqa: E402

# ------------------------------------------------------------------------------------------------------------------
# which documents, and where their translation files and Japanese versions live
# ------------------------------------------------------------------------------------------------------------------


def notebook_sources(root: Path = ROOT) -> list[Path]:
    return sorted((root / "chapters").glob("*.ipynb")) + sorted((root / "solutions").glob("*.ipynb"))


def page_sources(root: Path = ROOT) -> list[Path]:
    return [*sorted((root / "instructor").glob("*.md")), root / "README.md", root / "docs" / "grading.md"]


def sources(root: Path = ROOT) -> list[Path]:
    return notebook_sources(root) + page_sources(root)


def rel(path: Path, root: Path = ROOT) -> str:
    return Path(path).resolve().relative_to(root.resolve()).as_posix()


def translation_file(source: Path, root: Path = ROOT) -> Path:
    return root / "i18n" / LANG / Path(rel(source, root)).with_suffix(".yaml")


def target_of(repo_path: str) -> str | None:
    """The Japanese counterpart of an English file (repository-relative), or None when it has none."""
    if repo_path == "README.md":
        return "README.ja.md"
    top = repo_path.split("/", 1)[0]
    if top in ("chapters", "solutions", "exercises") and repo_path.endswith(".ipynb"):
        return f"{LANG}/{repo_path}"
    if top == "instructor" and repo_path.endswith(".md") or repo_path == "docs/grading.md":
        return f"{LANG}/{repo_path}"
    return None


def source_of(arg: str, root: Path = ROOT) -> Path:
    """A document named on the command line: its English path, or its translation file."""
    path = Path(arg)
    if path.suffix == ".yaml":
        stem = Path(rel(path.resolve(), root)).relative_to(f"i18n/{LANG}")
        for candidate in sources(root):
            if Path(rel(candidate, root)).with_suffix("") == stem.with_suffix(""):
                return candidate
        raise SystemExit(f"no English document for {arg}")
    return (root / path) if not path.is_absolute() else path


# ------------------------------------------------------------------------------------------------------------------
# units: what is translated, and the hash of its English
# ------------------------------------------------------------------------------------------------------------------


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


# a string that reads like prose: two words of letters separated by a space or punctuation
PROSE = re.compile(r"[A-Za-z]{2,}[ ,:;.!?'-]+[A-Za-z]{2,}")


def string_regions(code: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of every string literal in `code`, f-strings whole (Python 3.11 to 3.13)."""
    lines = code.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(pos):
        row, col = pos
        return starts[row - 1] + col

    regions, fstring_start, depth = [], None, 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            name = tokenize.tok_name[tok.type]
            if name == "FSTRING_START":
                if depth == 0:
                    fstring_start = offset(tok.start)
                depth += 1
            elif name == "FSTRING_END":
                depth -= 1
                if depth == 0:
                    regions.append((fstring_start, offset(tok.end)))
            elif tok.type == tokenize.STRING and depth == 0:
                regions.append((offset(tok.start), offset(tok.end)))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # a cell with IPython syntax (%magic) tokenizes as far as it can
    return regions


def code_literals(code: str) -> list[str]:
    return [code[a:b] for a, b in string_regions(code)]


def has_prose(code: str) -> bool:
    return any(PROSE.search(lit) for lit in code_literals(code))


HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def slug(heading: str) -> str:
    text = re.sub(r"[`*_\[\]()]", "", heading.lower())
    text = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    return text[:48].rstrip("-") or "section"


def page_sections(text: str) -> list[tuple[str, str]]:
    """A Markdown page cut at its headings (outside fenced code): [(key, text)], whose texts join to the page."""
    sections, current, key, fenced = [], [], "top", False
    seen = Counter()
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        m = None if fenced else HEADING.match(line.rstrip("\n"))
        if m:
            if current:
                sections.append((key, "".join(current)))
            base = slug(m.group(2))
            seen[base] += 1
            key = base if seen[base] == 1 else f"{base}-{seen[base]}"
            current = []
        current.append(line)
    if current or not sections:
        sections.append((key, "".join(current)))
    return sections


@dataclass
class Unit:
    key: str
    kind: str  # "markdown" (a Markdown cell or a page's section) or "code"
    english: str  # the Markdown text, or the code cell's source
    hash: str
    needs_entry: bool = True


def units(source: Path) -> list[Unit]:
    if source.suffix == ".ipynb":
        out = []
        for cell in nbtools.read(source).cells:
            if cell.cell_type == "code":
                out.append(
                    Unit(
                        cell.id, "code", cell.source, sha("\n".join(code_literals(cell.source))), has_prose(cell.source)
                    )
                )
            elif cell.cell_type in ("markdown", "raw"):
                out.append(Unit(cell.id, "markdown", cell.source, sha(cell.source)))
        return out
    return [Unit(key, "markdown", text, sha(text)) for key, text in page_sections(source.read_text(encoding="utf-8"))]


def load_entries(source: Path, root: Path = ROOT) -> dict:
    path = translation_file(source, root)
    if not path.exists():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise SystemExit(f"{rel(path, root)}: expected a mapping of unit keys to entries")
    return data


# ------------------------------------------------------------------------------------------------------------------
# consistency: what a translation must copy exactly
# ------------------------------------------------------------------------------------------------------------------

FENCE = re.compile(r"^[ \t]*(```|~~~)([^\n]*)\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S)
# a fenced block's kind, from its info string: code whose comments may be translated, or a drawing
COMMENTED_CODE = {"bash", "sh", "shell", "console", "python", "py"}
DRAWING = {"", "text"}
COMMENT = re.compile(r"(^|[ \t])#(?=[ \t]|$).*$", re.M)
# what a drawing must keep: identifiers with an underscore (d_h, norm_f, plain_gpt.py) and paths (course_utils/)
IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9.]*_[A-Za-z0-9_.]*|[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]*")
# Japanese spellings of what English writes with a word: "falls by 2" = 2分の1, "March 2024" = 2024年3月
JAPANESE_NUMERALS = [(re.compile(r"分の1(?![0-9.])"), "分の"), (re.compile(r"(?<=[0-9]年)(?:1[0-2]|[1-9])月"), "月")]
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
MATH = re.compile(r"\$\$.+?\$\$|(?<![\\$])\$(?!\s)[^$\n]+?(?<!\s)\$", re.S)
LINK_TARGET = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|(?:href|src)=\"([^\"]+)\"")
URL = re.compile(r"https?://\S+")
TAG = re.compile(r"<[^>\n]+>")
PLACEHOLDER = re.compile(r"\{[^{}]*\}")
NUMBER = re.compile(r"(?<![A-Za-z_])\d+(?:[.,]\d+)*(?:e[-+]?\d+)?")


def invariants(text: str) -> dict[str, Counter]:
    """What a translation of `text` must keep exactly, each as a multiset: code blocks and spans, formulas, link
    targets, {placeholders} and numbers (counted in the prose only, outside code, formulas, links and HTML tags).

    A fenced block of shell or Python code is kept exactly except its `#` comments, which may be translated. A fenced
    block without a language (or `text`) is a drawing (a board diagram, a file tree): its words may be translated,
    its numbers, inline code, identifiers (names with an underscore, paths) and number of lines must stay. The
    Japanese 「2分の1」 ("falls by 2") and 「2024年3月」 ("March 2024") count as the English numbers."""
    found = {"code blocks": Counter(), "inline code": Counter(), "formulas": Counter(), "links": Counter()}
    found["identifiers in drawings"] = Counter()
    rest = text
    for pattern, replacement in JAPANESE_NUMERALS:
        rest = pattern.sub(replacement, rest)

    def fenced(m):
        info, body = m.group(2).strip().lower(), m.group(3)
        if info in DRAWING:  # a board drawing or a file tree: its words are translated, its numbers and names kept
            found["code blocks"][f"(a drawing of {len(body.splitlines())} lines)"] += 1
            found["identifiers in drawings"].update(IDENTIFIER.findall(body))
            return "\n" + body + "\n"
        if info in COMMENTED_CODE:  # the code exactly, its comments translated
            body = "\n".join(line.rstrip() for line in COMMENT.sub(r"\1", body).splitlines())
        found["code blocks"][f"```{info}\n{body.strip()}\n```"] += 1
        return " "

    rest = FENCE.sub(fenced, rest)
    for m in CODE_SPAN.finditer(rest):
        found["inline code"][m.group(2).strip()] += 1
    rest = CODE_SPAN.sub(" ", rest)
    for m in MATH.finditer(rest):
        found["formulas"][re.sub(r"\s+", "", m.group(0))] += 1
    rest = MATH.sub(" ", rest)
    for a, b in LINK_TARGET.findall(rest):
        found["links"][a or b] += 1
    rest = LINK_TARGET.sub("] ", rest)
    rest = TAG.sub(" ", URL.sub(" ", rest))
    found["placeholders"] = Counter(PLACEHOLDER.findall(rest))
    rest = PLACEHOLDER.sub(" ", rest)
    found["numbers"] = Counter(NUMBER.findall(rest))
    return found


def differences(english: str, japanese: str) -> list[str]:
    """What the translation changed among the things it must copy: [] when consistent."""
    en, ja = invariants(english), invariants(japanese)
    problems = []
    for what in en:
        if en[what] != ja[what]:
            lost = sorted((en[what] - ja[what]).elements())
            added = sorted((ja[what] - en[what]).elements())
            problems.append(
                f"{what} differ: English has {lost or 'nothing more'}, Japanese has {added or 'nothing more'}"
            )
    return problems


def glossary() -> list[tuple[str, re.Pattern]]:
    if not GLOSSARY.exists():
        return []
    data = yaml.safe_load(GLOSSARY.read_text(encoding="utf-8")) or {}
    return [(t["ja"], re.compile(p)) for t in data.get("terms", []) for p in t.get("forbidden", []) or []]


def forbidden_terms(japanese: str, rules=None) -> list[str]:
    rules = glossary() if rules is None else rules
    return [f"{m.group(0)!r} (use {preferred})" for preferred, pattern in rules for m in pattern.finditer(japanese)]


def apply_strings(code: str, strings: dict) -> tuple[str, list[str]]:
    """The code with each English fragment of a string literal replaced by its Japanese; the problems found."""
    regions = string_regions(code)
    problems, spans = [], []
    for en, ja in strings.items():
        if not isinstance(en, str) or not isinstance(ja, str) or not en:
            problems.append(f"strings: {en!r} -> {ja!r}: both sides must be non-empty text")
            continue
        starts = [m.start() for m in re.finditer(re.escape(en), code)]
        if not starts:
            problems.append(f"strings: {en!r} is not in the cell's code")
        for s in starts:
            if not any(a <= s and s + len(en) <= b for a, b in regions):
                problems.append(
                    f"strings: {en!r} reaches outside a string literal (only text inside quotes may change)"
                )
        for p in differences(en, ja):
            problems.append(f"strings: {en!r}: {p}")
        spans += [(s, s + len(en), ja) for s in starts]
    spans.sort()
    for (_a1, b1, _), (a2, _b2, _) in zip(spans, spans[1:]):
        if a2 < b1:
            problems.append(f"strings: two fragments overlap at character {a2}")
            return code, problems
    out, last = [], 0
    for a, b, ja in spans:
        out += [code[last:a], ja]
        last = b
    out.append(code[last:])
    return "".join(out), problems


# ------------------------------------------------------------------------------------------------------------------
# generation
# ------------------------------------------------------------------------------------------------------------------

EXTERNAL = ("http://", "https://", "mailto:", "#", "data:", "/")
# what link rewriting leaves alone: fenced code blocks and code spans (as FENCE and CODE_SPAN above)
CODE = re.compile(r"^(```|~~~).*?^\1[ \t]*$|(`+).+?\2", re.M | re.S)


def rewrite_links(text: str, source_rel: str, target_rel: str) -> str:
    """Relative links of a document moved from source_rel to target_rel: to the Japanese counterpart if any."""
    src_dir, dst_dir = Path(source_rel).parent, Path(target_rel).parent

    def fix(target: str) -> str:
        if target.startswith(EXTERNAL):
            return target
        path, sep, anchor = target.partition("#")
        if not path:
            return target
        repo_path = os.path.normpath((src_dir / path).as_posix())
        if repo_path.startswith(".."):
            return target
        dest = target_of(repo_path) or repo_path
        return os.path.relpath(dest, dst_dir).replace(os.sep, "/") + sep + anchor

    def md(m):
        whole, target = m.group(0), m.group(1)
        return whole.replace(f"({target}", f"({fix(target)}", 1)

    def outside_code(part: str) -> str:
        part = re.sub(r"\]\(\s*<?([^)\s>]+)", md, part)
        return re.sub(r'((?:href|src)=")([^"]+)(")', lambda m: m.group(1) + fix(m.group(2)) + m.group(3), part)

    # code blocks and code spans stay as written; a link whose text is code ([`x`](y)) is rewritten like any other
    out, last = [], 0
    for m in CODE.finditer(text):
        out += [outside_code(text[last : m.start()]), m.group(0)]
        last = m.end()
    return "".join(out) + outside_code(text[last:])


def translated_markdown(unit: Unit, entry: dict) -> str:
    ja = entry["ja"]
    tail = unit.english[len(unit.english.rstrip("\n")) :]
    return ja.rstrip("\n") + tail


@dataclass
class Report:
    missing: list = field(default_factory=list)
    stale: list = field(default_factory=list)
    orphans: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    exempt: list = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)

    def ok(self) -> bool:
        return not (self.missing or self.stale or self.orphans or self.problems)


def review(source: Path, root: Path = ROOT, rules=None) -> Report:
    """Everything `check` says about one document's translation file."""
    name = rel(source, root)
    report = Report()
    entries = load_entries(source, root)
    doc_units = units(source)
    keys = {u.key for u in doc_units}
    for key in entries:
        if key not in keys:
            report.orphans.append(f"{name}: `{key}` names no cell or section of the English document")
    for unit in doc_units:
        _review_unit(report, unit, entries.get(unit.key), f"{name} `{unit.key}`", source, rules)
    return report


def _review_unit(report: Report, unit: Unit, entry, where: str, source: Path, rules) -> None:
    """What `check` says about one cell or section: its entry missing or malformed, stale (the English changed
    since), exempt (and why), then what its Markdown or its code cell's strings say."""
    if entry is None:
        if unit.kind == "markdown" or unit.needs_entry:
            report.missing.append(where)
        return
    if not isinstance(entry, dict) or "en" not in entry:
        report.problems.append(f"{where}: an entry needs `en` (the hash) and `ja` or `strings`")
        return
    if str(entry["en"]) != unit.hash:
        report.stale.append(
            f"{where}: the English changed since it was translated (hash {unit.hash}, entry {entry['en']})"
        )
    exempt = entry.get("exempt")
    if exempt:
        report.exempt.append(f"{where}: {exempt}")
    if unit.kind == "markdown":
        _review_markdown(report, unit, entry, where, source, rules)
    else:
        _review_code(report, unit, entry, where, rules)


def _review_markdown(report: Report, unit: Unit, entry: dict, where: str, source: Path, rules) -> None:
    """A Markdown cell or section: its Japanese must be there, keep the English's structure (unless the entry is
    exempt) and use no forbidden term."""
    if not isinstance(entry.get("ja"), str) or not entry["ja"].strip():
        report.problems.append(f"{where}: `ja` (the Japanese Markdown) is missing or empty")
        return
    report.counts["cells" if source.suffix == ".ipynb" else "sections"] += 1
    if not entry.get("exempt"):
        report.problems += [f"{where}: {p}" for p in differences(unit.english, entry["ja"])]
    report.problems += [f"{where}: forbidden term {t}" for t in forbidden_terms(entry["ja"], rules)]


def _review_code(report: Report, unit: Unit, entry: dict, where: str, rules) -> None:
    """A code cell: its `strings` must apply to the English code (an exempt entry may differ) and use no forbidden
    term."""
    strings = entry.get("strings")
    if not isinstance(strings, dict):
        report.problems.append(f"{where}: a code cell's entry needs `strings:` (a mapping, {{}} if none)")
        return
    report.counts["code cells"] += 1
    report.counts["strings"] += len(strings)
    _, problems = apply_strings(unit.english, strings)
    exempt = entry.get("exempt")
    report.problems += [f"{where}: {p}" for p in problems if not exempt or "differ" not in p]
    for ja in strings.values():
        if isinstance(ja, str):
            report.problems += [f"{where}: forbidden term {t}" for t in forbidden_terms(ja, rules)]


def build_notebook(source: Path, root: Path = ROOT):
    """The Japanese notebook for one English notebook; outputs kept from the stored one where the source is the same."""
    name = rel(source, root)
    target = root / target_of(name)
    entries = load_entries(source, root)
    en_units = {u.key: u for u in units(source)}
    nb = nbtools.read(source)
    ja = copy.deepcopy(nb)
    stored = learner_work.read_or_none(target)
    previous = {c.get("id"): c for c in stored.cells} if stored is not None else {}
    for cell in ja.cells:
        entry = entries.get(cell.get("id"))
        if cell.cell_type in ("markdown", "raw"):  # (English where a translation is missing: `check` reports it)
            has_ja = entry and isinstance(entry.get("ja"), str)
            text = translated_markdown(en_units[cell.id], entry) if has_ja else cell.source
            cell.source = rewrite_links(text, name, target_of(name))
        elif entry and cell.cell_type == "code" and isinstance(entry.get("strings"), dict):
            cell.source, _ = apply_strings(cell.source, entry["strings"])
        if cell.cell_type == "code":
            old = previous.get(cell.get("id"))
            if old is not None and old.source == cell.source:
                cell.outputs, cell.execution_count = old.outputs, old.execution_count
            else:
                cell.outputs, cell.execution_count = [], None
    ja.metadata["course_edition"] = {
        "lang": LANG,
        "translated_from": name,
        "note": "generated by `python tools/translate.py build` from the English notebook and "
        f"i18n/{LANG}/{Path(name).with_suffix('.yaml').as_posix()}; edit those instead",
    }
    return target, ja


def build_page(source: Path, root: Path = ROOT) -> tuple[Path, str]:
    name = rel(source, root)
    entries = load_entries(source, root)
    parts = []
    for unit in units(source):
        entry = entries.get(unit.key)
        parts.append(translated_markdown(unit, entry) if entry and isinstance(entry.get("ja"), str) else unit.english)
    banner = (
        f"<!-- generated by `python tools/translate.py build` from {name} and "
        f"i18n/{LANG}/{Path(name).with_suffix('.yaml').as_posix()}: edit those instead -->\n"
    )
    return root / target_of(name), banner + rewrite_links("".join(parts), name, target_of(name))


def notebook_view(nb) -> list:
    return [(c.cell_type, c.get("id"), c.source, c.metadata.get("slideshow")) for c in nb.cells]


def build(root: Path = ROOT, check: bool = False) -> list[str]:
    """Write the Japanese edition (or with check=True only compare it); returns the out-of-date files."""
    stale = []
    for source in notebook_sources(root):
        target, nb = build_notebook(source, root)
        old = learner_work.read_or_none(target)
        if (
            old is None
            or notebook_view(old) != notebook_view(nb)
            or old.metadata.get("course_edition") != nb.metadata.get("course_edition")
        ):
            stale.append(rel(target, root))
        if not check:
            target.parent.mkdir(parents=True, exist_ok=True)
            learner_work.keep_a_copy(target, nb, root)  # a learner's edits are copied to backups/ first
            nbtools.write(nbtools.strip_volatile(nb), target)
    for source in page_sources(root):
        target, text = build_page(source, root)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            stale.append(rel(target, root))
        if not check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    marker = root / LANG / ".course_lang"
    if not marker.exists() or marker.read_text(encoding="utf-8").strip() != LANG:
        stale.append(rel(marker, root))
        if not check:
            marker.write_text(LANG + "\n", encoding="utf-8")
    stale += [f"{LANG}/exercises/{n}" for n in exercises.generate(root / LANG, check=check)]
    return stale


# ------------------------------------------------------------------------------------------------------------------
# the command line
# ------------------------------------------------------------------------------------------------------------------


def todo(source: Path) -> str:
    entries = load_entries(source)
    out = [f"# {rel(source)} -> {rel(translation_file(source))}"]
    for unit in units(source):
        entry = entries.get(unit.key)
        if entry is not None and isinstance(entry, dict) and str(entry.get("en")) == unit.hash:
            continue
        if entry is None and unit.kind == "code" and not unit.needs_entry:
            continue
        state = "missing" if entry is None else "stale"
        out.append(f"\n# --- {state} ({unit.kind}) ---")
        if unit.kind == "markdown":
            out.append(
                f"{unit.key}:\n  en: {unit.hash}\n  ja: |-\n"
                + "\n".join("    " + line for line in unit.english.splitlines())
            )
        else:
            lits = "\n".join(f"#   {lit}" for lit in code_literals(unit.english))
            out.append(f"# string literals of the cell:\n{lits}\n{unit.key}:\n  en: {unit.hash}\n  strings: {{}}")
    return "\n".join(out)


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args else "check"
    if command == "build":
        written = build()
        print(f"Japanese edition written; {len(written)} file(s) changed" + ("".join(f"\n  {w}" for w in written)))
        return 0
    if command == "todo":
        for arg in args[1:]:
            print(todo(source_of(arg)))
        return 0
    rules = glossary()
    docs = [source_of(a) for a in args[1:]] or sources()
    total, failed = Counter(), False
    for source in docs:
        report = review(source, rules=rules)
        total.update(report.counts)
        if command == "stats":
            counts = ", ".join(f"{v} {k}" for k, v in sorted(report.counts.items())) or "nothing translated yet"
            print(f"{rel(source)}: {counts}" + "".join(f"\n   exempt: {e}" for e in report.exempt))
            continue
        for kind in ("missing", "stale", "orphans", "problems"):
            for line in getattr(report, kind):
                print(f"{kind}: {line}")
        failed |= not report.ok()
    if command == "stats":
        print("total: " + ", ".join(f"{v} {k}" for k, v in sorted(total.items())))
        return 0
    if command != "check":
        print(__doc__)
        return 2
    if not args[1:]:
        outdated = build(check=True)
        for name in outdated:
            print(f"outdated: {name} (run `python tools/translate.py build`)")
        failed |= bool(outdated)
    print("translations: " + ("problems found" if failed else "complete and consistent"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
