"""The instructors' batch grader, `python -m course_utils.grade SUBMISSIONS...` (docs/grading.md).

    cli      the command: finds the submissions, grades them in parallel worker processes, keeps the
             resume state, writes the gradebook (CSV), the feedback files and the summary
    run      one submission, start to finish: read and identify it, run it in a fresh kernel, call the
             learner's functions there on the grader's own inputs
    kernel   the protocol with the learner's kernel: the plain-data format both sides speak, and the
             messenger whose source text runs inside the kernel
    judge    the verdict on one graded item from what the kernel sent back, with the checks' own code
             (course_utils.checks), in the grader's process

The verdicts never come from the learner's kernel: it only runs the functions, and sends back data.
"""
