"""manifest.source_digest: it names the code that ran without asking git."""

from pinpath import manifest


def _tree(root, files):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_digest_follows_source_contents_and_paths_only(tmp_path):
    _tree(tmp_path, {"lib/pinpath/a.py": "x = 1\n", "notebooks/n.ipynb": "{}", "tools/t.sh": "echo\n"})
    first = manifest.source_digest(tmp_path)
    _tree(tmp_path, {"lib/pinpath/__pycache__/a.cpython-312.pyc": "bytecode", "outputs/run/x.py": "y = 2\n",
                     "lib/pinpath/notes.txt": "not a source"})
    assert manifest.source_digest(tmp_path) == first          # caches, outputs and other files do not count
    _tree(tmp_path, {"lib/pinpath/a.py": "x = 2\n"})
    changed = manifest.source_digest(tmp_path)
    assert changed != first
    (tmp_path / "lib/pinpath/a.py").rename(tmp_path / "lib/pinpath/b.py")
    assert manifest.source_digest(tmp_path) not in (first, changed)   # a renamed file is another tree


def test_git_state_carries_the_digest_also_where_the_commit_is_given(tmp_path, monkeypatch):
    _tree(tmp_path, {"params/p.yaml": "a: 1\n"})
    digest = manifest.source_digest(tmp_path)
    assert manifest.git_state(tmp_path)["sources"] == digest
    monkeypatch.setenv("PINPATH_GIT_COMMIT", "f" * 40)
    state = manifest.git_state(tmp_path)
    assert state["commit"] == "f" * 40 and state["sources"] == digest
