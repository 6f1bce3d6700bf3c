"""What the tests share that is not a fixture: paths, readers of the real data, the builds.

conftest.py keeps the fixtures and hooks; tests/tiers.py finds each test's tier from the
code it runs, looking for the gateways here (run_snakemake, require_shared, the paths under
../shared). The tier guard below fails a test that reaches a gateway its tier does not have.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
REAL = SHARED / "data" / "real"
REAL_IMAGES = REAL / "images"
SCENE = REAL / "multilabel" / "scene"
SCENE_FEATURES = 294
MSRC = REAL / "segmentations" / "msrc_v2"
KIWIX = REAL / "pages" / "kiwix_wikipedia"
POPULAR = REAL / "pages" / "dataset_popular"
MSRC_FEATURES = ["colorhist", "getlf", "gist", "bow_sift"]


# ---------------------------------------------------------------- the tier guard

class TierGuard:
    """The tier marks of the test now in setup or call (None outside a test). A gateway reached
    by a test whose marks lack its tier means tests/tiers.py missed it: the test fails, saying so."""

    def __init__(self) -> None:
        self.marks: set[str] | None = None
        self.test = ""
        self.missed: list[str] = []
        self.shared = tuple({str(SHARED), os.path.realpath(SHARED)})

    def check(self, tier: str, what: str) -> None:
        if self.marks is not None and tier not in self.marks:
            message = (f"{self.test} {what} but is not marked {tier!r}: the tier hook (tests/tiers.py) "
                       f"missed it; make the gateway visible to it")
            self.missed.append(message)
            pytest.fail(message, pytrace=False)

    def audit(self, event: str, args: tuple) -> None:
        """sys.addaudithook: a file or folder under ../shared opened by a test not marked real_data."""
        if self.marks is None or "real_data" in self.marks or event not in ("open", "os.listdir", "os.scandir"):
            return
        path = args[0] if args else None
        if isinstance(path, (str, bytes, os.PathLike)):
            name = os.fsdecode(path)
            if os.path.abspath(name).startswith(self.shared):
                self.missed.append(f"{self.test} reads {name} but is not marked 'real_data': the tier hook "
                                   f"(tests/tiers.py) missed it")


TIER_GUARD = TierGuard()
sys.addaudithook(TIER_GUARD.audit)


# ---------------------------------------------------------------- the real data

def require_shared(path: Path = REAL) -> Path:
    TIER_GUARD.check("real_data", f"reads {path}")
    if not path.exists():
        pytest.skip(f"needs the real test data at {path} (../shared is not present in this checkout's parent)")
    return path


def can_play_other_cpus() -> None:
    """Skips, saying why, unless this CPU has AVX2: then it can run OpenBLAS's Haswell,
    Sandybridge and SSE3 kernels and turn off the SIMD code OpenCV and numpy choose."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    flags = set(next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), []))
    if not {"avx", "avx2", "fma"} <= flags:
        pytest.skip("needs an x86-64 CPU with AVX2 to play CPUs with and without it")


def python_as_cpu(code: str, *args: str, **variables: str) -> str:
    """The output of `python -c code args` with this checkout's annobench, one BLAS thread and the
    environment `variables` that make this machine play another CPU (OPENBLAS_CORETYPE,
    OPENCV_CPU_DISABLE, NPY_DISABLE_CPU_FEATURES)."""
    env = {**os.environ, **variables, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def bsds_photos(n: int | None = None) -> list[Path]:
    photos = sorted(require_shared(REAL_IMAGES / "bsds500" / "train").glob("*.jpg"))
    return photos[:n] if n else photos


@dataclass(frozen=True)
class SceneData:
    """The Mulan scene set: 294 colour/texture features and 6 labels per photo, train and test."""

    labels: list[str]
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


@functools.lru_cache(maxsize=None)
def _scene() -> SceneData:
    root = require_shared(SCENE)
    labels = [label.get("name") for label in ElementTree.parse(root / "scene.xml").getroot()]
    parts = []
    for name in ("scene-train.arff", "scene-test.arff"):
        text = (root / name).read_text(encoding="utf-8")
        values = np.array([line.split(",") for line in text.split("@data", 1)[1].split()], dtype=np.float64)
        assert values.shape[1] == SCENE_FEATURES + len(labels)
        parts += [values[:, :SCENE_FEATURES].astype(np.float32), values[:, SCENE_FEATURES:] == 1]
    return SceneData(labels, *parts)


def read_scene() -> SceneData:
    require_shared(SCENE)  # the guard, on every call: the cache would hide later ones
    return _scene()


def write_image_list(path: Path, images: dict[str, Path]) -> Path:
    lines = ["image_id,path"] + [f"{image_id},{p}" for image_id, p in images.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def tree_bytes(root: Path, exclude: tuple[str, ...] = ("logs", "provenance", "release")) -> dict[str, bytes]:
    """Every file under root (relative path -> bytes), leaving out the given top-level folders.

    Logs and job records hold times; the release's data files are links to the
    build's and its manifest is compared, times aside, in test_release.py.
    """
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] not in exclude
    }


# ---------------------------------------------------------------- builds

def workflow_rules() -> set[str]:
    """The names of the workflow's rules, read from its rule files (no Snakemake process), with
    those it names in loops (a feature's, a codebook's; not a network's, named by the config)."""
    from annobench.core.config import load_config
    from annobench.plan import GLOBAL_FEATURES

    text = "".join(path.read_text(encoding="utf-8") for path in (REPO / "workflow" / "rules").glob("*.smk"))
    named = {f"feature_{feature}" for feature in GLOBAL_FEATURES}
    named |= {f"bow_codebook_{kind}" for kind in load_config()["features"]["bow"]["kinds"]}
    return set(re.findall(r"^\s*rule (\w+):", text, re.MULTILINE)) | named


def run_snakemake(workdir: Path, *args: str, check: bool = True, env: dict | None = None,
                  timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run our Snakefile with `workdir` as working directory (its .snakemake lives there).

    Snakemake writes its report to stderr; it is merged into `stdout` here.
    """
    TIER_GUARD.check("workflow", "runs Snakemake")
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake failed ({result.returncode}):\n{result.stdout[-6000:]}")
    return result


def demo_sections(demo: Path) -> dict:
    """The config sections that point a build at the demo's files in `demo` (relative to the
    build's working directory, or absolute), with the demo's own settings (demo/config.yaml)."""
    import yaml

    settings = yaml.safe_load((REPO / "demo" / "config.yaml").read_text(encoding="utf-8"))
    benchmark = settings["benchmark"]
    benchmark["vocabulary"] = str(demo / Path(benchmark["vocabulary"]).relative_to("demo"))
    benchmark["ground_truth"]["path"] = str(demo / Path(benchmark["ground_truth"]["path"]).relative_to("demo"))
    return {
        "input": {"images": str(demo / "images"), "pages": str(demo / "pages"),
                  "page_map": str(demo / "pages" / "mapping.csv"), "segmentations": str(demo / "segmentations"),
                  "search_log": str(demo / Path(settings["input"]["search_log"]).relative_to("demo"))},
        "benchmark": benchmark,
        "release": settings["release"],
    }


def caption_settings() -> dict:
    """benchmark.captions of the shared builds: the harvested page captions as references where
    Java runs the Meteor jar (tests of the caption outputs skip, saying why, elsewhere)."""
    return {"references": "harvested"} if java_available() else {}


def java_available() -> bool:
    return shutil.which("java") is not None


def demo_config(workdir: Path, edit=None) -> Path:
    """workdir/config.yaml of the shared demo build, the demo's files copied to workdir/demo and
    named relative to workdir (so the finished build folder can be copied and built on); `edit(config)`
    may change the config first."""
    import yaml

    if not (workdir / "demo").exists():
        shutil.copytree(REPO / "demo", workdir / "demo")
    config = {"output": "out", **demo_sections(Path("demo")), "features": {"bow": {"words": 50, "iterations": 10}}}
    config["benchmark"]["captions"] = caption_settings()
    if edit:
        edit(config)
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def demo_build_in(workdir: Path, cores: int = 2, edit=None) -> Path:
    """The demo, from a copy of its files (so tests may edit raw inputs), built into workdir/out."""
    run_snakemake(workdir, "--cores", str(cores), "--configfile", str(demo_config(workdir, edit)))
    return workdir / "out"


def msrc_kiwix_config(workdir: Path) -> Path:
    """Config of a real build: the MSRC-v2 photos with their segmentations, image k on the k-th
    (page, img src) pair of the kiwix Wikipedia pages, the image labels as benchmark ground truth.
    The page map is named relative to workdir, so the build folder can be copied."""
    import yaml

    from annobench.text.page_map import derive_mapping

    require_shared(MSRC)
    require_shared(KIWIX)
    pairs = derive_mapping(KIWIX).mapping
    photos = sorted(p.stem for p in (MSRC / "Images").iterdir() if p.is_file())
    lines = ["image_id,page_id,img_src"]
    for k, image_id in enumerate(photos):
        _, page, src = pairs[k % len(pairs)]
        lines.append(f'{image_id},{page},"{src}"')
    (workdir / "page_map.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = {
        "output": "out",
        "input": {"images": str(MSRC / "Images"), "pages": str(KIWIX), "page_map": "page_map.csv",
                  "segmentations": str(MSRC)},
        "segmentations": {"kind": "msrc"},
        "features": {"bow": {"kinds": ["sift"], "words": 50, "iterations": 10}},
        "benchmark": {"vocabulary": "", "ground_truth": {"source": "regions", "path": ""},
                      "features": MSRC_FEATURES, "region_split": {"subset_sizes": [5, 10]},
                      "captions": caption_settings(), "illustration": {"enabled": True}},
        "release": {"name": "msrc-v2-kiwix", "title": "MSRC-v2 photos on kiwix Wikipedia pages",
                    "description": "The MSRC-v2 photos with their segmentations, each on a real web page.",
                    "license": "other", "creators": ["annobench tests"]},
    }
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def saved_pages_build_in(workdir: Path, pages: Path, *targets: str) -> None:
    """Saved pages with their images beside them (the shared kiwix or popular pages), the page
    map derived (annobench pages-map), built without segmentations or a benchmark: a build where
    the ingest rejects images (interface icons under ingest.min_width) that the pages show.
    `targets`: only these rules' outputs (text_all: the images and the text tables)."""
    import yaml

    require_shared(pages)
    derived = workdir / "derived"
    done = subprocess.run([sys.executable, "-m", "annobench.cli", "pages-map", "--pages", str(pages),
                           "--out", str(derived)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    config = {"output": "out",
              "input": {"image_list": str(derived / "images.csv"), "pages": str(pages),
                        "page_map": str(derived / "mapping.csv"), "segmentations": ""},
              "features": {"bow": {"kinds": ["sift"], "words": 50, "iterations": 10}},
              "benchmark": {"vocabulary": "", "ground_truth": {"source": "", "path": ""}}}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    done = run_snakemake(workdir, *targets, "--cores", "2", "--configfile", str(workdir / "config.yaml"))
    (workdir / "build.log").write_text(done.stdout, encoding="utf-8")


def shared_build(tmp_path_factory, name: str, make) -> Path:
    """`make(workdir)` run once per test run, whatever the number of xdist workers: the first
    worker to ask builds under a file lock in the run's shared temporary folder, the others wait
    and use its folder. A failed build fails every test that asks for it, without building again."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, above each worker's own
    workdir, done, failed = base / name, base / f"{name}.done", base / f"{name}.failed"
    with FileLock(str(base / f"{name}.lock")):
        if failed.exists():
            raise AssertionError(f"the shared build {name} failed in another test:\n{failed.read_text()}")
        if not done.exists():
            shutil.rmtree(workdir, ignore_errors=True)
            workdir.mkdir()
            try:
                make(workdir)
            except pytest.skip.Exception:
                raise  # missing data: every test that asks skips, saying why
            except BaseException as error:
                failed.write_text(f"{type(error).__name__}: {error}"[-8000:])
                raise
            done.touch()
    return workdir


def copy_build(workdir: Path, target: Path, config: str = "config.yaml") -> Path:
    """A copy of a finished build's working directory (times kept, so Snakemake sees it as
    built), checked to need nothing before a test changes one thing in it."""
    shutil.copytree(workdir, target, symlinks=True, dirs_exist_ok=True)
    dry = run_snakemake(target, "-n", "--configfile", str(target / config))
    assert "Nothing to be done" in dry.stdout, dry.stdout[-3000:]
    return target


CHROMIUM = Path("/usr/bin/chromium")


def chromium_path() -> Path:
    """Debian's chromium, which the browser tests drive through Playwright; skips, saying why, without it."""
    from debian import debian_program

    if debian_program("chromium", str(CHROMIUM)) is None:
        pytest.skip(f"needs the Debian chromium at {CHROMIUM} (apt-get install chromium)")
    return CHROMIUM
