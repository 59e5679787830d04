"""The README is a landing page (at most 200 lines, the two set-up commands first) and the
documents hold the rest: every relative link in them leads to a file of the repository (and to a
heading of it, where it names one), and none names a path of the machine it was written on."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCUMENTS = sorted({README, ROOT / "CONTRIBUTING.md", *ROOT.joinpath("docs").glob("*.md"),
                    *ROOT.joinpath("benchmarks").glob("*.md")})

FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\(([^()\s]+)\)")
# a path of some machine: a home, a scratch or system folder, a drive letter
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|root|home|Users|tmp|opt|srv|mnt|var|nix|private)/|\b[A-Z]:\\")


def links(path: Path) -> list[str]:
    """The targets of the Markdown links and images of a document, outside code."""
    text = CODE_SPAN.sub("", FENCE.sub("", path.read_text()))
    return LINK.findall(text)


def anchors(path: Path) -> set[str]:
    """The anchors GitHub makes of a document's headings: lower case, punctuation dropped,
    spaces as hyphens, a repeated one numbered."""
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", FENCE.sub("", path.read_text()), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return out


def test_the_readme_is_a_landing_page():
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move the details into docs/"


def test_the_readme_begins_with_the_two_set_up_commands_ci_runs():
    text = README.read_text()
    first_blocks = re.findall(r"^```sh\n(.*?)\n```", text, re.M | re.S)[:2]
    install, test = first_blocks
    assert install.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install . && gradcli grad ")
    sample = re.search(r"gradcli grad (\S+)", install).group(1)
    assert (ROOT / sample).is_file(), sample
    assert test == "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && pytest"
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -I -m venv --clear .venv && . .venv/bin/activate" in ci
    assert "pip install -q -e '.[test]' && pytest\n" in ci
    # nothing but the title and one paragraph before them
    before = text[:text.index("```sh")].strip().split("\n\n")
    assert before[0] == "# gradcli" and len(before) == 3, before


def test_every_relative_link_of_the_documents_leads_to_a_file_and_its_heading():
    checked = 0
    for path in DOCUMENTS:
        for target in links(path):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            file, _, anchor = target.partition("#")
            resolved = (path.parent / file).resolve() if file else path
            assert resolved.is_relative_to(ROOT) and resolved.exists(), (path.relative_to(ROOT), target)
            if anchor:
                assert resolved.suffix == ".md" and anchor in anchors(resolved), (path.relative_to(ROOT), target)
            checked += 1
    assert checked > 50


def test_the_readme_links_every_document():
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in links(README)}
    documents = {*ROOT.joinpath("docs").glob("*.md"), ROOT / "CONTRIBUTING.md", *ROOT.joinpath("benchmarks").glob("*.md")}
    assert sorted(p.relative_to(ROOT) for p in documents - linked) == []


def test_no_document_names_a_path_of_a_machine_or_an_issue_number():
    for path in DOCUMENTS:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            assert not MACHINE_PATH.search(line), f"{path.relative_to(ROOT)}:{number}: {line}"
            assert not re.search(r"\bissue #?\d+", line, re.I), f"{path.relative_to(ROOT)}:{number}: {line}"


def test_the_checks_see_what_they_look_for():
    """The patterns above catch what they are for (a check that could not fail proves nothing)."""
    assert MACHINE_PATH.search("python: 3.11.7 (/work/main/.venv/bin/python)")
    assert MACHINE_PATH.search("see /home/someone/gradcli") and MACHINE_PATH.search(r"C:\Users\me")
    assert not MACHINE_PATH.search("`> /dev/full`, `/proc/self/mem`, . .venv/bin/activate, docs/work/x")
    assert "gradients-tfgradients-semantics" in anchors(ROOT / "docs" / "language.md")
    assert "arrays-to-a-file---out" in anchors(ROOT / "docs" / "cli.md")
    assert links(ROOT / "docs" / "insight.md").count("graph.png") == 1  # the image, not the console text


def test_the_readmes_gradients_inside_a_program_run_and_print_what_their_comments_say():
    """The one-per-library block runs as one program; each print's value is the number its
    comment gives (as TensorFlow 2.21, JAX 0.10, PyTorch 2.13 and autograd 1.9 print them)."""
    import numpy as np
    from gradcli import api
    section = README.read_text().split("## Gradients inside a program", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    outputs = api.evaluate(block, fixes=False).outputs
    printed = [line for line in block.splitlines() if "print(" in line]
    assert len(outputs) == len(printed) == 4
    for line, (text, got) in zip(printed, outputs.items()):
        assert text in line
        want = [float(v) for v in re.findall(r"-?\d+\.?\d*", line.split("#", 1)[1].split(":")[-1])]
        np.testing.assert_allclose(np.ravel(got), want, rtol=1e-7)
