"""The submitted runs of a round: found under `input.submissions` when the build is planned.

The folder holds one folder per group; each group folder holds its runs, each a file (or, for a box
run of detections files, a folder) with a metadata file beside it of the same name and the suffix
`.yaml` (or `.yml`):

    submissions/KDEVIR/run9.txt
    submissions/KDEVIR/run9.yaml

    group: KDEVIR                 # the group folder's name
    run: run9                     # the run file's name without its suffix
    subtask: annotation           # annotation | boxes | captions | selection | illustration
    modality: both                # visual | textual | both
    external_data: yes            # yes | no
    external_data_description: WordNet; an ImageNet-trained CNN   # what, when yes
    geometry: xyxy                # a box run's folder of detections files: xyxy | xyxy-exclusive | xywh

A run that cannot be planned (a name with other characters than letters, digits, `_`, `-` and `.`,
no metadata or metadata that is not as above, a subtask this build does not have, two run files of
one name, a group's run past the limit of `benchmark.campaign.max_runs`, counted in name order) is
rejected here, with its reasons; the others each get a job that checks and evaluates them
(campaign.runs). Only the run's own files and metadata feed its job, so a run added later reruns
its own job and the tables that gather every run, nothing else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from annobench.benchmark.boxes.model import GEOMETRIES
from annobench.core.errors import AnnobenchError

SUBTASKS = ("annotation", "boxes", "captions", "selection", "illustration")
MODALITIES = ("visual", "textual", "both")
METADATA_SUFFIXES = (".yaml", ".yml")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
METADATA_KEYS = ("group", "run", "subtask", "modality", "external_data", "external_data_description", "geometry")
REQUIRED_KEYS = METADATA_KEYS[:5]
MAX_METADATA_BYTES = 64 * 1024


class SubmissionsError(AnnobenchError):
    """The submissions folder cannot be read at all (the message says why)."""


@dataclass(frozen=True)
class Submission:
    """A run found under the submissions folder: planned (a job checks and evaluates it) when
    `reasons` is empty, else rejected with them."""

    group: str
    run: str
    path: str  # the run file or folder, absolute
    metadata_path: str  # "" when there is none
    metadata: dict = field(default_factory=dict)  # as validated (empty when invalid)
    reasons: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The run's name on the leaderboards: GROUP/RUN."""
        return f"{self.group}/{self.run}"

    @property
    def key(self) -> str:
        return f"{self.group}/{self.run}"

    def spec(self) -> dict:
        """What the run's job is given: its files (relative to the submissions folder) and metadata."""
        return {"group": self.group, "run": self.run, "metadata": self.metadata}

    def row(self) -> dict:
        """The run as the campaign_results job gets a run rejected when planned."""
        return {"group": self.group, "run": self.run, "file": Path(self.path).name,
                "metadata": self.metadata, "reasons": list(self.reasons)}


def find_submissions(folder: str, max_runs: int, subtasks: dict[str, str | None]) -> list[Submission]:
    """Every run of every group under `folder`, in (group, run) order.

    subtasks: each subtask -> None when the build has it, else why not (a run of it is rejected)."""
    if not folder:
        return []
    root = Path(folder)
    if not root.is_dir():
        raise SubmissionsError(f"input.submissions {folder}: no such folder")
    found = []
    for group_dir in sorted(p for p in root.iterdir() if not p.name.startswith(".")):
        if not group_dir.is_dir():
            found.append(Submission(group_dir.name, group_dir.stem, str(group_dir.resolve()), "", {},
                                    (f"{group_dir.name} is a file: the submissions folder holds one folder per "
                                     "group, each holding its runs",)))
            continue
        found += _group_runs(group_dir, max_runs, subtasks)
    return found


def _group_runs(group_dir: Path, max_runs: int, subtasks: dict[str, str | None]) -> list[Submission]:
    group = group_dir.name
    entries = sorted(p for p in group_dir.iterdir() if not p.name.startswith("."))
    metadata = {p.stem: p for p in entries if p.is_file() and p.suffix.lower() in METADATA_SUFFIXES}
    runs: dict[str, list[Path]] = {}
    for path in entries:
        if not (path.is_file() and path.suffix.lower() in METADATA_SUFFIXES):
            runs.setdefault(path.stem if path.is_file() else path.name, []).append(path)
    found = []
    for position, (run, paths) in enumerate(sorted(runs.items()), start=1):
        reasons = []
        if not NAME.fullmatch(group):
            reasons.append(f"group folder {group!r}: a group name is letters, digits, '_', '-' and '.', starting "
                           "with a letter or digit")
        if not NAME.fullmatch(run):
            reasons.append(f"run {run!r}: a run name is letters, digits, '_', '-' and '.', starting with a letter "
                           "or digit")
        if len(paths) > 1:
            reasons.append(f"{len(paths)} run files named {run!r} ({', '.join(p.name for p in paths)}): give each "
                           "run its own name")
        if position > max_runs:
            reasons.append(f"run {position} of group {group!r}: a group submits at most {max_runs} runs "
                           "(benchmark.campaign.max_runs), counted in name order")
        meta_path = metadata.get(run)
        checked = {}
        if meta_path is None:
            reasons.append(f"no metadata file {run}.yaml beside the run")
        else:
            checked, problems = read_metadata(meta_path, group, run, subtasks)
            reasons += problems
        found.append(Submission(group, run, str(paths[0].resolve()), str(meta_path.resolve()) if meta_path else "",
                                checked if not reasons else checked, tuple(reasons)))
    for stem in sorted(set(metadata) - set(runs)):
        found.append(Submission(group, stem, str(metadata[stem].resolve()), str(metadata[stem].resolve()), {},
                                (f"metadata {metadata[stem].name} without a run file {stem}.EXT beside it",)))
    return found


def read_metadata(path: Path, group: str, run: str, subtasks: dict[str, str | None]) -> tuple[dict, list[str]]:
    """(the metadata as given, its problems): every key of METADATA_KEYS known, the group and run
    those of the folder and file, a subtask this build has."""
    import yaml

    where = f"metadata {path.name}"
    if path.stat().st_size > MAX_METADATA_BYTES:
        return {}, [f"{where}: larger than {MAX_METADATA_BYTES} bytes"]
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        return {}, [f"{where}: not UTF-8 text ({error.reason} at byte {error.start})"]
    except yaml.YAMLError as error:
        return {}, [f"{where}: not YAML: {' '.join(str(error).split())}"]
    if not isinstance(data, dict):
        return {}, [f"{where}: must be a mapping of {', '.join(REQUIRED_KEYS)}"]
    problems = [f"{where}: unknown key {key!r} (known: {', '.join(METADATA_KEYS)})"
                for key in sorted(map(str, data)) if key not in METADATA_KEYS]
    problems += [f"{where}: {key} is missing" for key in REQUIRED_KEYS if key not in data]
    metadata = {key: data[key] for key in METADATA_KEYS if key in data}
    if "group" in data and str(data["group"]) != group:
        problems.append(f"{where}: group {data['group']!r}, but the run is in the folder of group {group!r}")
    if "run" in data and str(data["run"]) != run:
        problems.append(f"{where}: run {data['run']!r}, but the run file is named {run!r}")
    subtask = data.get("subtask")
    if "subtask" in data and subtask not in SUBTASKS:
        problems.append(f"{where}: subtask {subtask!r} is not one of {', '.join(SUBTASKS)}")
    elif subtask in SUBTASKS and subtasks.get(subtask):
        problems.append(f"{where}: this build has no {subtask} subtask ({subtasks[subtask]})")
    if "modality" in data and data["modality"] not in MODALITIES:
        problems.append(f"{where}: modality {data['modality']!r} is not one of {', '.join(MODALITIES)}")
    external = data.get("external_data")
    if "external_data" in data and not isinstance(external, bool):
        problems.append(f"{where}: external_data {external!r} must be yes or no")
    description = data.get("external_data_description", "")
    if not isinstance(description, str):
        problems.append(f"{where}: external_data_description must be text")
    elif external is True and not description.strip():
        problems.append(f"{where}: external_data is yes: say what in external_data_description")
    geometry = data.get("geometry")
    if geometry is not None and geometry not in GEOMETRIES:
        problems.append(f"{where}: geometry {geometry!r} is not one of {', '.join(GEOMETRIES)}")
    metadata = {"group": group, "run": run, "subtask": subtask if subtask in SUBTASKS else None,
                "modality": metadata.get("modality") if metadata.get("modality") in MODALITIES else None,
                "external_data": external if isinstance(external, bool) else None,
                "external_data_description": description.strip() if isinstance(description, str) else "",
                **({"geometry": geometry} if geometry in GEOMETRIES else {})}
    return metadata, problems
