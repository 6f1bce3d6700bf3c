"""The benchmark stage's settings, read from the config once, where each of its jobs starts."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class BenchmarkSettings:
    """The config's `benchmark` section (config.schema.yaml documents each key) and the ontology it uses."""

    vocabulary: str  # a concept file, or "" for the ground truth's own labels
    ground_truth: dict  # source, path, raw, lift_to_ancestors
    images: str  # annotated | all
    split: dict  # train, dev, test shares and seed, or lists
    region_split: dict  # subset_sizes, train_fraction, seed
    k: int  # top-k decisions
    seed: int  # of the random baselines
    knn: dict
    cooccurrence: dict
    overlap: dict  # feature, neighbours, share
    evaluation: dict  # seed of tied scores
    exports: dict
    ontology: str  # segmentations.ontology when the build has segmentations, else ""

    @classmethod
    def from_config(cls, config: dict) -> "BenchmarkSettings":
        section = config["benchmark"]
        ontology = config["segmentations"]["ontology"] if config["input"]["segmentations"] else ""
        names = [f.name for f in fields(cls) if f.name != "ontology"]
        return cls(**{name: section[name] for name in names}, ontology=ontology or "")

    def neighbours_of(self, kind: str) -> int:
        """How many neighbours a neighbour baseline (knn, cooccurrence) uses."""
        return {"knn": self.knn, "cooccurrence": self.cooccurrence}[kind]["neighbours"]

    def parents(self) -> dict[str, str]:
        """The ontology (label -> parent), empty without one."""
        from annobench.regions.stage import read_ontology

        return read_ontology(self.ontology) if self.ontology else {}
