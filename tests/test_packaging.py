"""The package as a user installs it: ``python -m build`` makes an sdist and a wheel (the wheel
built from the sdist, so the sdist is complete), the wheel goes into a fresh virtualenv, and the
installed command runs a sample with its own configs and serves its own page's files.

Offline: the build runs without isolation (``setuptools`` and ``build`` come with the test
extra), and the fresh virtualenv finds the dependencies in the project's own ``.venv`` through a
path entry (never its ``.pth`` files, so the editable install there is not seen): what is
checked is the wheel's own content, installed by pip with ``--no-index``."""

from __future__ import annotations

import email
import json
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

import subextract

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_videos" / "zh_bottom.mp4"
DISTRIBUTION = "subextract-ocr"  # "subextract" on PyPI is an unrelated mkv tool

pytestmark = pytest.mark.slow


def test_the_distribution_name_is_ours():
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION and project["license"] == "Apache-2.0"
    assert project["scripts"] == {"subextract": "subextract.cli:main"}
    assert (REPO / "LICENSE").read_text(encoding="utf-8").lstrip().startswith("Apache License")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("source") / "subextract"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", "bench", "sample_videos"))
    dist = tmp_path_factory.mktemp("dist")
    result = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(source)],
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return dist


def test_sdist_and_wheel_hold_the_package_data(built):
    wheel = next(built.glob("subextract_ocr-*.whl"))
    sdist = next(built.glob("subextract_ocr-*.tar.gz"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for data in ("subextract/configs/default.yaml", "subextract/configs/fast.yaml", "subextract/serve/web/index.html",
                 "subextract/serve/web/app.js", "subextract/py.typed"):
        assert data in names
    metadata = email.message_from_bytes(zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith(".dist-info/METADATA"))))
    assert metadata["Name"] == DISTRIBUTION and metadata["Version"] == subextract.__version__
    assert metadata["License-Expression"] == "Apache-2.0"
    assert "Topic :: Multimedia :: Video" in metadata.get_all("Classifier")
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    members = tarfile.open(sdist).getnames()
    assert any(m.endswith("/LICENSE") for m in members) and any(m.endswith("/README.md") for m in members)


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory) -> Path:
    """A fresh virtualenv with the wheel installed by pip, offline."""
    env = tmp_path_factory.mktemp("fresh") / "venv"
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # The dependencies: the project's .venv, as a plain path entry (its .pth files, the editable
    # install among them, are not processed).
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wheel = next(built.glob("subextract_ocr-*.whl"))
    # --ignore-installed: the project's editable install of the same distribution is on that path
    # entry, and pip would take it as installed already; --no-deps: the dependencies are there.
    result = subprocess.run([str(python), "-m", "pip", "install", "--no-index", "--find-links", str(built),
                             "--disable-pip-version-check", "--ignore-installed", "--no-deps", DISTRIBUTION],
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert f"Successfully installed {DISTRIBUTION}-{subextract.__version__}" in result.stdout, result.stdout
    assert wheel.name.startswith("subextract_ocr-")
    return env


def run_installed(env: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(env / "bin" / "subextract"), *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd, check=False)


def test_the_installed_command_runs_a_sample(installed, tmp_path):
    version = run_installed(installed, "--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout == f"subextract {subextract.__version__}\n", version.stderr
    out = tmp_path / "zh.srt"
    run = run_installed(installed, str(SAMPLE), "--config", "fast", "--end", "6", "-o", str(out), "-q", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "知其雄，守其雌，为天下溪" in out.read_text(encoding="utf-8")


def test_the_installed_package_is_the_wheels_with_its_data(installed, tmp_path):
    code = ("import json, subextract\n"
            "from importlib import resources\n"
            "from importlib.metadata import distribution\n"
            "from subextract.config import load_settings, preset_names\n"
            "web = resources.files('subextract.serve.web')\n"
            "print(json.dumps({'file': subextract.__file__, 'presets': preset_names(),\n"
            "                  'fast': load_settings('fast').ocr.engine,\n"
            "                  'page': [n for n in ('index.html', 'app.js', 'style.css') if (web / n).is_file()],\n"
            "                  'distribution': distribution('subextract-ocr').metadata['Name']}))\n")
    result = subprocess.run([str(installed / "bin" / "python"), "-c", code], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert Path(found["file"]).is_relative_to(installed), found["file"]  # the wheel's copy, not the checkout's
    assert {"fast", "accurate"} <= set(found["presets"]) and found["fast"] == "rapidocr"
    assert found["page"] == ["index.html", "app.js", "style.css"] and found["distribution"] == DISTRIBUTION
