"""A throw-away JupyterHub on this machine, the way tests/test_hub.py runs one: a training room in miniature.

Run by the test as `python -m jupyterhub -f tools/hub/jupyterhub_config.py` in a temporary folder, with these
variables set (the test chooses free ports and the folder):

    COURSE_HUB_STATE     the folder for the hub's database, cookie secret, proxy pid file and the users' homes
    COURSE_HUB_PORT      the public port (configurable-http-proxy listens there, on 127.0.0.1)
    COURSE_HUB_API_PORT  the hub's own port, reached through the proxy and by the single-user servers
    COURSE_PROXY_API_PORT  the proxy's REST API, which the hub uses to add a route per learner
    COURSE_HUB_PASSWORD  the password every learner logs in with

What runs is what a small training-room hub runs, minus TLS and real accounts:
  * configurable-http-proxy from tools/hub/node_modules (pinned in package.json and package-lock.json;
    `npm ci` in tools/hub installs it; the test does that itself when it is missing);
  * one shared password for every learner (SharedPasswordAuthenticator: any name logs in with it, which is
    DummyAuthenticator's old `password` setting, deprecated since JupyterHub 5.3);
  * SimpleLocalProcessSpawner: each learner's server is a process of this user, with its own home folder
    (no Unix accounts, no isolation between learners: fine for a test, never for a real room);
  * the single-user server is this virtual environment's `jupyterhub-singleuser` (JupyterLab), which loads the
    nbgitpuller server extension that pip enabled in .venv/etc/jupyter: the /git-pull links work.
"""

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (provided by JupyterHub when it loads this file)

HERE = Path(__file__).resolve().parent
STATE = Path(os.environ["COURSE_HUB_STATE"])

c.JupyterHub.bind_url = f"http://127.0.0.1:{os.environ['COURSE_HUB_PORT']}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ["COURSE_HUB_API_PORT"])
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops the learners' servers and the proxy
c.JupyterHub.cleanup_proxy = True

c.ConfigurableHTTPProxy.command = [str(HERE / "node_modules" / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ['COURSE_PROXY_API_PORT']}"
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")

c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = os.environ["COURSE_HUB_PASSWORD"]
c.Authenticator.allow_all = True  # any learner's name, with the shared password

c.JupyterHub.spawner_class = "simple"  # jupyterhub.spawner.SimpleLocalProcessSpawner
c.SimpleLocalProcessSpawner.home_dir_template = str(STATE / "home" / "{username}")
# The venv's own single-user server (its shebang is the venv's Python, whatever PATH says), opening JupyterLab.
c.Spawner.cmd = [str(Path(sys.executable).parent / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
# The course's notebooks compute on the CPU with a fixed hash seed, as under `make lab` and the browser suite.
c.Spawner.environment = {"COURSE_DEVICE": "cpu", "PYTHONHASHSEED": "0"}
if os.getuid() == 0:  # CI runs as root; every server listens on 127.0.0.1 only
    c.Spawner.args = ["--ServerApp.allow_root=True"]
# a busy 2-core machine starts three JupyterLab servers one after the other: give each time
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
