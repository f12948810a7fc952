"""`python -m course_utils.grade SUBMISSIONS...`: the instructors' batch grader (docs/grading.md).

The command lives in course_utils.grading.cli; this module keeps its name short and stable.
`python -m course_utils.grade --help` lists the options.
"""

import sys

from .grading.cli import main

if __name__ == "__main__":
    sys.exit(main())
