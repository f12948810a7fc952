"""torch's thread count for a cell of the CPU matrix (tools/cpu_matrix.py).

torch reads OMP_NUM_THREADS when it starts, but never takes more threads than the machine has cores: on a 2-core
machine OMP_NUM_THREADS=4 gives 2, while a learner's 8-core laptop runs 8. With this folder on PYTHONPATH and
COURSE_TORCH_THREADS=n, every Python that imports torch (pytest's workers, the notebooks' kernels, the sweeps'
worker processes) calls torch.set_num_threads(n) right after the import. Nothing happens without the variable.
"""

import os
import sys


class _SetThreadsOnImport:
    """A meta-path finder that lets torch import normally, then sets its thread count."""

    def __init__(self, n: int):
        self.n = n

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.set_num_threads(self.n)

        spec.loader.exec_module = exec_module
        return spec


if os.environ.get("COURSE_TORCH_THREADS"):
    sys.meta_path.insert(0, _SetThreadsOnImport(int(os.environ["COURSE_TORCH_THREADS"])))
