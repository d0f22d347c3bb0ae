"""A clone alone is enough: nothing reads outside the repository, every data set it reads is here."""

from __future__ import annotations

import re

from conftest import PUBLISHED_DATA, REPO

SOURCES = [p for pattern in ("scalekit/**/*.py", "cli/**/*.py", "bench/*.py", "tests/**/*.py",
                             "notebooks/*.ipynb", "docs/*.md", "README.md", ".ci/run")
           for p in REPO.glob(pattern)]
# the steering checkout's data folder, an absolute path of this machine, or two levels up
# (written in pieces, so that this file does not itself read as such a path)
OUTSIDE = re.compile("|".join(re.escape(piece) for piece in (
    "../" + "shared", "shared" + "/data", '/ "' + 'shared"', "/" + "work/", "../" + "../")))


def test_no_source_reads_a_path_outside_the_repository():
    offenders = [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
                 for path in SOURCES
                 for number, line in enumerate(path.read_text().splitlines(), 1)
                 if OUTSIDE.search(line)]
    assert offenders == []


def test_every_data_set_named_in_the_sources_is_in_the_repository():
    named = {match for path in SOURCES
             for match in re.findall(r"data/published/([\w.\-]+\.(?:csv|json))", path.read_text())}
    assert named, "the sources name no published data set"
    assert sorted(name for name in named if not (PUBLISHED_DATA / name).is_file()) == []


def test_every_published_file_has_its_provenance():
    provenance = (PUBLISHED_DATA / "PROVENANCE.md").read_text()
    files = sorted(p.name for p in PUBLISHED_DATA.iterdir() if p.name != "PROVENANCE.md")
    assert len(files) >= 13
    assert [name for name in files if f"`{name}`" not in provenance] == []
