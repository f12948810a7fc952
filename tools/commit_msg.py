"""The commit message's shape: a subject line of at most 72 characters, then a blank line, then the why.

    python tools/commit_msg.py .git/COMMIT_EDITMSG      (pre-commit's commit-msg hook runs it)

`git log --oneline`, GitHub's history and `git shortlog` show the subject alone, cut at about 72 characters, so the
subject says what changed in one line and the body says why. Lines git strips (comments, from `#`) are ignored.
Exit 0 when the message has that shape; else one line per problem and exit 1.
"""

from __future__ import annotations

import sys
from pathlib import Path

MAX_SUBJECT = 72


def problems(message: str) -> list[str]:
    lines = [line for line in message.splitlines() if not line.startswith("#")]
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines or not lines[0].strip():
        return ["the subject line is empty"]
    found = []
    if len(lines[0]) > MAX_SUBJECT:
        found.append(f"the subject is {len(lines[0])} characters; keep it to {MAX_SUBJECT} and put the why in the body")
    if len(lines) > 1 and lines[1].strip():
        found.append("the second line must be blank: the subject is one line, the body starts after a blank line")
    return found


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    found = problems(Path(args[0]).read_text(encoding="utf-8"))
    for problem in found:
        print(f"commit message: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
