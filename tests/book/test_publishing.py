"""The Pages workflow runs what the README's publishing instructions run, with pinned actions."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"


def _workflow() -> dict:
    wf = yaml.safe_load(WORKFLOW.read_text())
    if True in wf:  # YAML 1.1 reads the key `on` as True
        wf["on"] = wf.pop(True)
    return wf


def _make_targets(script: str) -> list[str]:
    """The targets of every `make` command in a shell script (variables and options aside)."""
    targets = []
    for line in script.splitlines():
        line = line.split("#", 1)[0]
        for cmd in re.split(r"&&|\|\||;", line):
            words = cmd.split()
            while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
                words.pop(0)  # VAR=value make ...
            if words and words[0] == "make":
                targets += [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    return targets


def _readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert m, f"README has no section '## {title}'"
    return m.group(1)


def _code_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```(?:bash|sh|console)?\n(.*?)^```", markdown, re.MULTILINE | re.DOTALL)


def _steps(wf: dict) -> list[dict]:
    return [s for job in wf["jobs"].values() for s in job.get("steps", [])]


def test_make_targets_helper():
    assert _make_targets("make env\nPROFILE=tiny make book -j2  # make test\nmake a b && echo make c") == [
        "env", "book", "a", "b"]


def test_workflow_runs_the_readme_publishing_targets():
    readme = [t for block in _code_blocks(_readme_section("Publishing the book")) for t in _make_targets(block)]
    workflow = [t for s in _steps(_workflow()) if "run" in s for t in _make_targets(s["run"])]
    assert readme, "the README's publishing section has no make command"
    assert workflow == readme, f"workflow runs {workflow}, the README says {readme}"
    assert "publish" in workflow


def test_workflow_targets_exist_in_the_makefile():
    make = (ROOT / "Makefile").read_text()
    defined = set(re.findall(r"^([A-Za-z][\w-]*):", make, re.MULTILINE))
    for step in _steps(_workflow()):
        for target in _make_targets(step.get("run", "")):
            assert target in defined, target


def test_workflow_triggers_permissions_and_deploy():
    wf = _workflow()
    assert wf["on"]["push"]["branches"] == ["main"]
    build, deploy = wf["jobs"]["build"], wf["jobs"]["deploy"]
    assert deploy["needs"] == "build"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    uses = [s["uses"].split("@")[0] for s in _steps(wf) if "uses" in s]
    assert uses == ["actions/checkout", "actions/setup-python", "actions/upload-pages-artifact", "actions/deploy-pages"]
    setup = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/setup-python"))
    assert str(setup["with"]["python-version"]) == "3.11"  # the lock's Python
    upload = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "book/_build/html"
    assert "BOOK_HTML := book/_build/html" in (ROOT / "Makefile").read_text()
    # the only push: gh-pages, where the Colab launch buttons open the executed chapters
    assert [s["run"].strip() for s in build["steps"] if "git push" in s.get("run", "")] == [
        "git push --force origin gh-pages"]
    assert build["permissions"] == {"contents": "write"} and wf["permissions"] == {"contents": "read"}
    # the torch CPU wheel: the lock's pin is found on PyTorch's CPU page
    assert "download.pytorch.org/whl/cpu" in build["env"]["PIP_FIND_LINKS"]


def test_actions_are_pinned_to_commits():
    for step in _steps(_workflow()):
        if "uses" in step:
            ref = step["uses"].split("@", 1)[1]
            assert re.fullmatch(r"[0-9a-f]{40}", ref), f"{step['uses']} is not pinned to a commit SHA"
    # and the tag each SHA stands for is written beside it
    for line in WORKFLOW.read_text().splitlines():
        if "uses:" in line:
            assert re.search(r"#\s*v\d+\.\d+\.\d+", line), line


def test_publish_target_never_pushes():
    make = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^publish:.*\n((?:\t.*\n)+)", make, re.MULTILINE).group(1)
    commands = [line for line in recipe.splitlines() if not line.lstrip("\t@").startswith("echo")]
    assert any("ghp-import" in c and "--no-jekyll" in c for c in commands)
    assert not any(re.search(r"(\s-p\b|--push\b|git push)", c) for c in commands), commands
    assert re.search(r"^publish: book\b", make, re.MULTILINE)
