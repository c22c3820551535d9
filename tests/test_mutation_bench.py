"""benchmarks/mutation.py --changed-since: only the mutants on lines added or changed since a commit are sampled."""

import subprocess
import sys

import pytest

from benchmark_scripts import load_benchmark

pytest.importorskip("cosmic_ray")

BEFORE = "def f(a, b):\n    x = a + b\n    y = a - b\n    return x * y\n\n\ndef g(a):\n    return a + 1\n"
# line 2 rewritten, line 3 kept, a line inserted after 4 (new line 5), g's body deleted and rewritten
AFTER = ("def f(a, b):\n    x = a * b\n    y = a - b\n    return x * y\n    z = 2 + 3\n\n\ndef g(a):\n"
         "    return a - 1\n")


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


@pytest.fixture
def repo(tmp_path):
    pkg = tmp_path / "src" / "roofline"
    pkg.mkdir(parents=True)
    (pkg / "m.py").write_text(BEFORE)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "before")
    (pkg / "m.py").write_text(AFTER)
    (pkg / "new.py").write_text("def h(a):\n    return a + 2\n")
    return tmp_path


def test_changed_lines_are_the_new_sides_added_and_rewritten_lines(repo):
    bench = load_benchmark("mutation")
    pkg = repo / "src" / "roofline"
    assert bench.changed_lines("HEAD", pkg / "m.py", repo) == {2, 5, 9}
    _git(repo, "add", ".")  # a file new since the commit: every line of it
    assert bench.changed_lines("HEAD", pkg / "new.py", repo) == {1, 2}


def test_a_hunk_that_only_deletes_adds_no_line():
    bench = load_benchmark("mutation")
    assert bench.added_lines("@@ -3,2 +2,0 @@\n-a\n-b\n@@ -9 +8 @@\n-c\n+d\n") == {8}


def test_only_mutants_on_changed_lines_are_enumerated(repo, monkeypatch):
    bench = load_benchmark("mutation")
    monkeypatch.setattr(bench, "REPO", repo)
    monkeypatch.setitem(bench.PACKAGES, "m", "m.py")
    every, _ = bench.enumerate_mutants("m")
    changed, _ = bench.enumerate_mutants("m", "HEAD")
    assert {m["line"] for m in every} == {2, 3, 4, 5, 9}
    assert {m["line"] for m in changed} == {2, 5, 9}
    assert changed == [m for m in every if m["line"] in {2, 5, 9}]


def test_a_commit_that_does_not_exist_is_refused_in_one_line(monkeypatch, capsys):
    bench = load_benchmark("mutation")
    monkeypatch.setattr(sys, "argv", ["mutation.py", "--changed-since", "no-such-commit-h6", "--only", "count"])
    with pytest.raises(SystemExit) as exc:
        bench.main()
    assert "not a commit" in str(exc.value) and "\n" not in str(exc.value)


def test_the_copy_mutants_run_in_holds_the_benchmark_scripts_tests_load(tmp_path, monkeypatch):
    """tests/cli/test_bad_input.py loads benchmarks/bad_inputs.py: without the scripts in the copy, a target whose
    subset holds such a test stopped at its unmutated run ('the unmutated test subset fails')."""
    import os

    bench = load_benchmark("mutation")
    monkeypatch.setattr(os, "environ", dict(os.environ))  # _prepare sets the mutation run's variables
    monkeypatch.setattr(sys, "dont_write_bytecode", sys.dont_write_bytecode)
    workdir = bench._prepare(tmp_path)
    assert (workdir / "benchmarks" / "bad_inputs.py").is_file()
    assert (workdir / "benchmarks" / "results").is_dir() and (workdir / "tests" / "benchmark_scripts.py").is_file()
