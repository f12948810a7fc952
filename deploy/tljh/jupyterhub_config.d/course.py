"""TLJH: the course's additions to JupyterHub's configuration (deploy/tljh/install.sh copies this file into
/opt/tljh/config/jupyterhub_config.d/, which TLJH reads after its own settings, so these win).

Every learner's server opens the nbgitpuller link: the first start clones the course into ~/normalization-course,
later starts merge new commits without overwriting a learner's edits, then chapter 00 opens. JupyterLab's menus
speak the edition's language as with `make lab` (tools/lab_settings/<en|ja>; "ja" for a Japanese-speaking room).
install.sh writes its COURSE_REPO and COURSE_BRANCH into the two lines below when it copies this file
(tests/test_deploy.py checks that the defaults here, in install.sh and in deploy/z2jh agree).
"""

from urllib.parse import quote, urlencode

c = get_config()  # noqa: F821 (JupyterHub's config loader defines get_config)

COURSE_REPO = "https://github.com/your-org/normalization-course"
COURSE_BRANCH = "main"
TARGET = "normalization-course"  # the folder in each learner's home
COURSE_DIR = "/srv/normalization-course"  # install.sh's copy: the lab settings
LAB_LANGUAGE = "en"

pull = {
    "repo": COURSE_REPO,
    "branch": COURSE_BRANCH,
    "targetpath": TARGET,
    "urlpath": f"lab/tree/{TARGET}/chapters/00_welcome.ipynb",
}
c.Spawner.default_url = "/git-pull?" + urlencode(pull, quote_via=quote, safe="")
c.Spawner.environment.update({"JUPYTER_CONFIG_PATH": f"{COURSE_DIR}/tools/lab_settings/{LAB_LANGUAGE}"})
