#!/bin/bash
# The Littlest JupyterHub (TLJH): the course on one VM. Run as root on the VM, once TLJH is installed
# (https://tljh.jupyter.org, "Installing on your own server"), and again after a change to the lock or course_utils:
#
#   sudo COURSE_REPO=https://github.com/your-org/normalization-course bash deploy/tljh/install.sh
#
# 1. the course in /srv/normalization-course (read-only for learners: their copies come from nbgitpuller);
# 2. TLJH's user environment (/opt/tljh/user, shared by every learner): the lock's CPU set, every file checked
#    against its hash, torch's CPU build, course_utils, then pip's check;
# 3. deploy/tljh/jupyterhub_config.d/course.py into TLJH's config: the nbgitpuller link as the default URL and
#    JupyterLab's language settings;
# 4. per-learner limits from the capacity plan (benchmarks/bench_capacity.py; tests/test_deploy.py checks them)
#    and the idle culler, with tljh-config.
set -euo pipefail
COURSE_REPO="${COURSE_REPO:-https://github.com/your-org/normalization-course}"
COURSE_BRANCH="${COURSE_BRANCH:-main}"
COURSE_DIR=/srv/normalization-course
USER_PY=/opt/tljh/user/bin/python

if [ -d "$COURSE_DIR/.git" ]; then
  git -C "$COURSE_DIR" fetch origin "$COURSE_BRANCH" && git -C "$COURSE_DIR" checkout -q FETCH_HEAD
else
  git clone --branch "$COURSE_BRANCH" "$COURSE_REPO" "$COURSE_DIR"
fi
cd "$COURSE_DIR"
"$USER_PY" tools/check_python.py  # the user environment's Python must be one the lock supports
"$USER_PY" -m pip install --no-cache-dir --require-hashes -r requirements-cpu.txt
torch_version=$(sed -n 's/^torch==\([^ ;]*\).*/\1/p' requirements.txt)
# torch's CPU build, unless it is there already: a reinstall would leave learners' new kernels without torch for a
# while (pip would keep another build of the same version, hence the uninstall)
if ! "$USER_PY" -c "import sys, torch; sys.exit(torch.__version__ != '${torch_version}+cpu')" 2>/dev/null; then
  "$USER_PY" -m pip uninstall --yes --quiet torch || true
  "$USER_PY" -m pip install --no-cache-dir --no-deps --index-url https://download.pytorch.org/whl/cpu "torch==${torch_version}+cpu"
fi
"$USER_PY" -m pip install --no-cache-dir --no-deps --no-build-isolation -e .
"$USER_PY" -m pip check

# the hub's configuration, with this run's COURSE_REPO and COURSE_BRANCH in the learners' nbgitpuller link
sed -e "s|^COURSE_REPO = .*|COURSE_REPO = \"${COURSE_REPO}\"|" -e "s|^COURSE_BRANCH = .*|COURSE_BRANCH = \"${COURSE_BRANCH}\"|" \
  deploy/tljh/jupyterhub_config.d/course.py > /opt/tljh/config/jupyterhub_config.d/course.py
chmod 0644 /opt/tljh/config/jupyterhub_config.d/course.py

tljh-config set user_environment.default_app jupyterlab
tljh-config set limits.memory 3.25G
tljh-config set limits.cpu 2
tljh-config set services.cull.enabled true
tljh-config set services.cull.timeout 3600
tljh-config set services.cull.every 300
tljh-config reload
