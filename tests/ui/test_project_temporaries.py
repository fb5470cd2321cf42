"""Issue 24: a save killed mid-write leaves its temporary beside the project until the next save removes it; until
then it must never be offered as a project (the Open dialog's filter, a folder listing of projects)."""

from __future__ import annotations

import fnmatch
import re

from PySide6.QtCore import QDir

from explorer.core import files
from explorer.core.files import atomic_write_text
from explorer.ui.project_controller import FILE_FILTER


def test_a_killed_saves_temporary_is_not_offered_as_a_project(tmp_path, monkeypatch):
    made = []
    real = files.tempfile.mkstemp

    def spy(*args, **kwargs):
        fd, name = real(*args, **kwargs)
        made.append(name)
        return fd, name

    monkeypatch.setattr(files.tempfile, "mkstemp", spy)
    project = tmp_path / "study.hwproj"
    atomic_write_text(project, "{}")
    assert len(made) == 1
    temporary = tmp_path / made[0].split("/")[-1]
    temporary.write_text('{"format": 7, "half a proj')  # what a kill mid-write leaves behind
    patterns = re.search(r"\(([^)]*)\)", FILE_FILTER.split(";;")[0]).group(1).split()
    assert patterns == ["*.hwproj"]
    assert fnmatch.fnmatch(project.name, patterns[0]) and not fnmatch.fnmatch(temporary.name, patterns[0])
    listed = QDir(str(tmp_path)).entryList(patterns, QDir.Filter.Files)  # hidden files are not listed either
    assert list(listed) == ["study.hwproj"]
    assert temporary.name.startswith(".") and temporary.name.endswith(".tmp")
