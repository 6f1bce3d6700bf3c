"""The reference implementation's Java tools: Meteor 1.5 and the Stanford PTB tokenizer.

pycocoevalcap (the optional extra `captions`) ships meteor-1.5.jar with its English
paraphrase table (`data/paraphrase-en.gz` beside the jar) and stanford-corenlp-3.4.1.jar;
both need `java` on PATH. MeteorProcess takes only the jar and its data from the installed
package (its folder, found by importlib.resources) and drives the jar's own line protocol
itself, as pycocoevalcap's `Meteor` class does, through none of that class's attributes: one
`java -jar -Xmx2G meteor-1.5.jar - - -stdio -l en -norm` process, run in the jar's folder,
serves a whole evaluation, so the jar and its paraphrase table load once, not once per image.
For each segment it writes `SCORE ||| ref 1 ||| ... ||| ref n ||| hypothesis` and reads the
segment's statistics line; `EVAL ||| stats 1 ||| ... ||| stats n` then returns one line per
segment (its Meteor) and a last line, the corpus Meteor over the pooled statistics.

Both jars read line-based input, so every text is first put on one line with single spaces
(all Unicode whitespace, line and paragraph separators included, collapsed); a line break
left inside a caption would shift every later caption against its image.
"""

from __future__ import annotations

import atexit
import importlib.resources
import importlib.util
import math
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from annobench.benchmark.captions.files import CaptionError

TOKENIZERS = ("ptb", "none")
EXTRA = "captions"
METEOR_JAR = "meteor-1.5.jar"
# The command pycocoevalcap runs, in the jar's folder (the jar finds its data/ there).
METEOR_ARGS = ["java", "-jar", "-Xmx2G", METEOR_JAR, "-", "-", "-stdio", "-l", "en", "-norm"]
METEOR_COMMAND = " ".join(METEOR_ARGS)
CLOSE_SECONDS = 60  # the jar ends at the end of its input; past this it is killed
NO_JAVA = ("the caption measures run Meteor 1.5 in Java and no `java` is on PATH "
           "(Debian: apt-get install default-jre-headless)")


def require_tools() -> None:
    """Fail with what to install when pycocoevalcap or Java is missing."""
    if importlib.util.find_spec("pycocoevalcap") is None:
        raise CaptionError(f"the caption measures need pycocoevalcap (Meteor 1.5 and the PTB tokenizer): "
                           f"pip install 'annobench[{EXTRA}]'")
    if shutil.which("java") is None:
        raise CaptionError(NO_JAVA)


def one_line(text: str) -> str:
    return " ".join(text.split())


def tokenize(texts: Sequence[str], method: str) -> list[str]:
    """Each text as the scorers see it: `ptb` = pycocoevalcap's PTBTokenizer (lower case,
    punctuation tokens removed; one Java process for all texts), `none` = as written, on one line."""
    if method not in TOKENIZERS:
        raise CaptionError(f"unknown tokenisation {method!r}; expected one of {', '.join(TOKENIZERS)}")
    lines = [one_line(text) for text in texts]
    if method == "none" or not lines:
        return lines
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    tokens = PTBTokenizer().tokenize({0: [{"caption": line} for line in lines]}).get(0, [])
    if len(tokens) != len(lines):
        raise CaptionError(f"the PTB tokenizer returned {len(tokens)} lines for {len(lines)} captions")
    return tokens


def _protocol_safe(text: str) -> str:
    """'|||' separates fields of a Meteor line: pycocoevalcap removes it from hypotheses only,
    so the same cleaning is applied to references (a no-op on hypotheses already clean)."""
    return one_line(text.replace("|||", ""))


def score_line(hypothesis: str, references: Sequence[str]) -> str:
    """The jar's SCORE line of a segment, built as pycocoevalcap's `Meteor._stat` builds it
    (its double-space squeeze is a no-op on a text already on one line)."""
    return " ||| ".join(("SCORE", " ||| ".join(_protocol_safe(text) for text in references),
                         _protocol_safe(hypothesis)))


def meteor_jar() -> Path:
    """meteor-1.5.jar in the installed pycocoevalcap (its English data in `data/` beside it)."""
    try:
        jar = Path(str(importlib.resources.files("pycocoevalcap.meteor") / METEOR_JAR))
    except ModuleNotFoundError:
        jar = None
    if jar is None or not jar.is_file():
        raise CaptionError(f"the caption measures need {METEOR_JAR} from pycocoevalcap: "
                           f"pip install 'annobench[{EXTRA}]'")
    return jar


class MeteorProcess:
    """One Meteor 1.5 process, used as a context manager: `statistics`, `evaluate` and `score`
    may be called many times; the process ends with the `with` block."""

    def __enter__(self) -> "MeteorProcess":
        jar = meteor_jar()
        # The jar's messages go to a file, read on failure: a pipe nobody reads could fill.
        self._stderr = tempfile.TemporaryFile()
        try:
            self._process = subprocess.Popen(METEOR_ARGS, cwd=jar.parent, stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=self._stderr)
        except FileNotFoundError:
            self._stderr.close()
            raise CaptionError(NO_JAVA) from None
        except OSError as error:
            self._stderr.close()
            raise CaptionError(f"could not start Meteor ({METEOR_COMMAND}): {error}") from None
        return self

    def running(self) -> bool:
        return self._process.poll() is None

    def score(self, segments: Sequence[tuple[str, Sequence[str]]]) -> tuple[float, list[float]]:
        """(corpus Meteor, each segment's Meteor) of (hypothesis, references) segments: their
        statistics, then one EVAL over them (the corpus score pools the statistics), as
        pycocoevalcap's compute_score does."""
        return self.evaluate(self.statistics(segments))

    def statistics(self, segments: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
        """Each segment's sufficient statistics, as the jar's SCORE line gives them: segments
        scored apart (other jobs, other processes) pool in `evaluate` to the same figures."""
        found = []
        for hypothesis, references in segments:
            self._send(score_line(hypothesis, references))
            found.append(self._receive())
        return found

    def evaluate(self, statistics: Sequence[str]) -> tuple[float, list[float]]:
        """(corpus Meteor, each segment's Meteor) from segment statistics, in one EVAL line."""
        if not statistics:
            return math.nan, []
        self._send("EVAL" + "".join(f" ||| {line}" for line in statistics))
        scores = [self._number() for _ in statistics]
        return self._number(), scores

    def _send(self, line: str) -> None:
        try:
            self._process.stdin.write((line + "\n").encode())
            self._process.stdin.flush()
        except (ValueError, OSError) as error:  # the jar died: a closed pipe
            raise CaptionError(f"Meteor failed ({METEOR_COMMAND}): {self._failure(error)}") from None

    def _receive(self) -> str:
        line = self._process.stdout.readline()
        if not line:  # the jar died: the end of its output
            raise CaptionError(f"Meteor failed ({METEOR_COMMAND}): {self._failure(EOFError('no output'))}")
        return line.decode().strip()

    def _number(self) -> float:
        line = self._receive()
        try:
            return float(line)
        except ValueError:
            raise CaptionError(f"Meteor failed ({METEOR_COMMAND}): {self._failure(ValueError(repr(line)))}") \
                from None

    def _failure(self, error: Exception) -> str:
        """The jar's last message (or the error seen) after ending it."""
        self._process.kill()
        self._process.wait()
        self._stderr.seek(0)
        stderr = self._stderr.read().decode(errors="replace").strip().splitlines()
        return stderr[-1] if stderr else str(error)

    def __exit__(self, kind, *exc) -> None:
        process = self._process
        if process.poll() is None:
            if kind is None:
                try:
                    process.stdin.close()  # the jar ends at the end of its input
                    process.wait(timeout=CLOSE_SECONDS)
                except (OSError, subprocess.TimeoutExpired):
                    process.kill()
            else:  # an error in the block: no more work for the jar
                process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout, self._stderr):
            try:
                stream.close()
            except OSError:
                pass


_shared: MeteorProcess | None = None


def shared_meteor() -> MeteorProcess:
    """The Meteor process of this Python process, started at first use and ended at exit.

    The jar spends some 7 CPU-seconds loading its paraphrase table before its first line; a job
    that evaluates many runs (the merged caption jobs of a small build) or a program that scores
    several times would pay that at each one. Its SCORE and EVAL lines keep no state between
    them, so one process serves them all. A process that failed is replaced by a new one."""
    global _shared
    if _shared is None or not _shared.running():
        _shared = MeteorProcess().__enter__()
        atexit.register(_shared.__exit__, None, None, None)
    return _shared


def end_shared_meteor() -> None:
    """End the shared process now (the next shared_meteor starts another)."""
    global _shared
    if _shared is not None:
        _shared.__exit__(None, None, None)
        _shared = None
