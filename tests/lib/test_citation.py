"""LICENSE and CITATION.cff: present, consistent with pyproject.toml, citing the two reproduced papers.

CITATION.cff was validated against the CFF 1.2.0 schema with ``cffconvert --validate``; cffconvert
is not in the lock (it pins jsonschema < 4, which the book's nbformat cannot use), so this test
checks the schema's required fields and the study's own content without the schema.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from saliency_lib import __version__

ROOT = Path(__file__).resolve().parents[2]


def _pyproject() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _cff() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))


def test_licence_matches_pyproject():
    project = _pyproject()["project"]
    assert project["license"] == "MIT"  # an SPDX expression, not the deprecated table
    assert project.get("license-files") == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert re.search(r"^Copyright \(c\) \d{4} The saliency_lib authors$", text, re.MULTILINE)
    assert "THE SOFTWARE IS PROVIDED \"AS IS\"" in text


def test_citation_cff_required_fields():
    cff = _cff()
    assert cff["cff-version"] == "1.2.0"
    for key in ("message", "title", "authors"):
        assert cff.get(key), key
    for author in cff["authors"]:
        assert author.get("name") or author.get("family-names")
    assert cff["type"] == "software"
    assert cff["license"] == _pyproject()["project"]["license"]
    assert str(cff["version"]) == __version__


def test_citation_cff_cites_the_reproduced_papers():
    refs = {r["title"]: r for r in _cff()["references"]}
    huber = refs["Benchmarking Perturbation-Based Saliency Maps for Explaining Atari Agents"]
    assert [a["family-names"] for a in huber["authors"]] == ["Huber", "Limmer", "André"]
    assert huber["type"] == "article" and huber["year"] == 2022
    assert huber["journal"] == "Frontiers in Artificial Intelligence"
    assert huber["doi"] == "10.3389/frai.2022.903875"
    itaya = refs["Visual Explanation using Attention Mechanism in Actor-Critic-based Deep Reinforcement Learning"]
    assert [a["family-names"] for a in itaya["authors"]][0] == "Itaya" and len(itaya["authors"]) == 5
    assert itaya["type"] == "conference-paper" and itaya["year"] == 2021
    assert "IJCNN" in itaya["conference"]["name"]
    urls = {i["value"] for r in refs.values() for i in r.get("identifiers", []) if i["type"] == "url"}
    assert urls == {"https://arxiv.org/abs/2101.07312", "https://arxiv.org/abs/2103.04067"}
    for r in refs.values():
        for a in r["authors"]:
            assert set(a) <= {"family-names", "given-names"} and a["given-names"]
