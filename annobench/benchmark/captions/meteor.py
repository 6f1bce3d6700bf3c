"""The reference implementation's Java tools, through pycocoevalcap: Meteor 1.5 and the
Stanford PTB tokenizer.

pycocoevalcap (the optional extra `captions`) ships meteor-1.5.jar with its English
paraphrase table and stanford-corenlp-3.4.1.jar; both need `java` on PATH. Its `Meteor`
class keeps one `java -jar meteor-1.5.jar - - -stdio -l en -norm` process: MeteorProcess
holds one for a whole evaluation and feeds it every segment, so the jar and its paraphrase
table load once, not once per image.

Both jars read line-based input, so every text is first put on one line with single spaces
(all Unicode whitespace, line and paragraph separators included, collapsed); a line break
left inside a caption would shift every later caption against its image.
"""

from __future__ import annotations

import importlib.util
import math
import shutil
from typing import Sequence

from annobench.benchmark.captions.files import CaptionError

TOKENIZERS = ("ptb", "none")
EXTRA = "captions"
METEOR_COMMAND = "java -jar -Xmx2G meteor-1.5.jar - - -stdio -l en -norm"


def require_tools() -> None:
    """Fail with what to install when pycocoevalcap or Java is missing."""
    if importlib.util.find_spec("pycocoevalcap") is None:
        raise CaptionError(f"the caption measures need pycocoevalcap (Meteor 1.5 and the PTB tokenizer): "
                           f"pip install 'annobench[{EXTRA}]'")
    if shutil.which("java") is None:
        raise CaptionError("the caption measures run Meteor 1.5 in Java and no `java` is on PATH "
                           "(Debian: apt-get install default-jre-headless)")


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


class MeteorProcess:
    """One Meteor 1.5 process, used as a context manager: `score` may be called many times."""

    def __enter__(self) -> "MeteorProcess":
        from pycocoevalcap.meteor.meteor import Meteor

        try:
            self._meteor = Meteor()
        except OSError as error:
            raise CaptionError(f"could not start Meteor ({METEOR_COMMAND}): {error}") from None
        return self

    def score(self, segments: Sequence[tuple[str, Sequence[str]]]) -> tuple[float, list[float]]:
        """(corpus Meteor, each segment's Meteor) of (hypothesis, references) segments: their
        statistics, then one EVAL over them (the corpus score pools the statistics), as
        pycocoevalcap's compute_score does."""
        return self.evaluate(self.statistics(segments))

    def statistics(self, segments: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
        """Each segment's sufficient statistics, as the jar's SCORE line gives them: segments
        scored apart (other jobs, other processes) pool in `evaluate` to the same figures."""
        try:
            return [self._meteor._stat(_protocol_safe(hypothesis), [_protocol_safe(text) for text in refs])
                    for hypothesis, refs in segments]
        except (ValueError, OSError) as error:  # the jar died: a closed pipe
            raise CaptionError(f"Meteor failed ({METEOR_COMMAND}): {self._failure(error)}") from None

    def evaluate(self, statistics: Sequence[str]) -> tuple[float, list[float]]:
        """(corpus Meteor, each segment's Meteor) from segment statistics, in one EVAL line."""
        if not statistics:
            return math.nan, []
        process = self._meteor.meteor_p
        try:
            process.stdin.write(("EVAL" + "".join(f" ||| {line}" for line in statistics) + "\n").encode())
            process.stdin.flush()
            scores = [float(process.stdout.readline().strip()) for _ in statistics]
            return float(process.stdout.readline().strip()), scores
        except (ValueError, OSError) as error:  # the jar died: an empty line, or a closed pipe
            raise CaptionError(f"Meteor failed ({METEOR_COMMAND}): {self._failure(error)}") from None

    def _failure(self, error: Exception) -> str:
        # A lock held when the jar failed (the wrapper's own calls) would block its __del__ forever.
        if self._meteor.lock.locked():
            self._meteor.lock.release()
        process = self._meteor.meteor_p
        process.kill()
        process.wait()
        stderr = process.stderr.read().decode(errors="replace").strip().splitlines()
        return stderr[-1] if stderr else str(error)

    def __exit__(self, *exc) -> None:
        process = self._meteor.meteor_p
        if process.poll() is None:
            process.stdin.close()  # the jar ends at the end of its input
            process.wait()
        process.stdout.close()
        process.stderr.close()
