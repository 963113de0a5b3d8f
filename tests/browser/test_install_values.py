"""Finding and obtaining a Chromium, step by step, with stand-in commands (issue 23).

``find_chromium`` looks in a fixed order; ``ensure_chromium`` tries
Playwright's download, then apt-get as root, and otherwise says the one
command to run. Each step is pinned here with small shell scripts on a
``PATH`` of their own (no download, no package manager is ever run), with
the exact words a user reads.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from actonce.browser import BrowserNotFound, Obtained, chromium_version, ensure_chromium
from actonce.browser import _install as install
from actonce.browser._discovery import _playwright_chromium, find_chromium

SH = "/bin/sh"


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{SH}\n{body}", encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine with no Chromium anywhere: an empty PATH folder, no Playwright download."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    # ensure_chromium exports what it finds: set first, so that the teardown restores
    # the real value (a bare delenv of an unset variable records nothing to undo, and
    # the next test's Browser() then launched the stand-in script).
    monkeypatch.setenv("ACTONCE_CHROMIUM", "unset by this fixture")
    monkeypatch.delenv("ACTONCE_CHROMIUM")
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "pw"))
    monkeypatch.setenv("PATH", str(bin_))
    return bin_


def test_the_explicit_chromium_comes_first_and_must_be_executable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chrome = _script(tmp_path / "my-chrome", "exit 0\n")
    monkeypatch.setenv("ACTONCE_CHROMIUM", str(chrome))
    assert find_chromium() == str(chrome)
    plain = tmp_path / "not-executable"
    plain.write_text("", encoding="utf-8")
    monkeypatch.setenv("ACTONCE_CHROMIUM", str(plain))
    with pytest.raises(BrowserNotFound) as caught:
        find_chromium()
    assert str(caught.value) == f"ACTONCE_CHROMIUM={str(plain)!r} is not an executable file"


def test_playwrights_newest_download_comes_before_the_path(bare: Path, tmp_path: Path) -> None:
    assert _playwright_chromium() is None
    _script(bare / "chromium", "exit 0\n")
    _script(bare / "chromium-browser", "exit 0\n")
    assert find_chromium() == str(bare / "chromium")
    (bare / "chromium").unlink()
    assert find_chromium() == str(bare / "chromium-browser")
    old = _script(tmp_path / "pw" / "chromium-1000" / "chrome-linux" / "chrome", "exit 0\n")
    new = _script(tmp_path / "pw" / "chromium-1100" / "chrome-linux64" / "chrome", "exit 0\n")
    assert _playwright_chromium() == str(new) != str(old)
    assert find_chromium() == str(new)
    new.chmod(0o644)  # a download that is not executable is passed over
    assert find_chromium() == str(bare / "chromium-browser")


def test_the_default_download_folder_is_playwrights_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PLAYWRIGHT_BROWSERS_PATH", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    chrome = _script(
        tmp_path / ".cache" / "ms-playwright" / "chromium-9" / "chrome-linux" / "chrome", ""
    )
    assert _playwright_chromium() == str(chrome)


def test_none_found_says_how_to_install_one(bare: Path) -> None:
    with pytest.raises(BrowserNotFound) as caught:
        find_chromium()
    assert str(caught.value) == (
        "no Chromium found: install one with `apt-get install chromium` (Debian/Ubuntu) "
        "or `python -m playwright install chromium`, or set ACTONCE_CHROMIUM to its path"
    )


def test_a_chromiums_version_is_its_first_printed_line(tmp_path: Path) -> None:
    talks = _script(tmp_path / "talks", 'echo ""\necho "  Chromium 120.0.1  "\necho "more"\n')
    assert chromium_version(str(talks)) == "Chromium 120.0.1"
    assert chromium_version(str(_script(tmp_path / "silent", "exit 0\n"))) is None
    failing = _script(tmp_path / "failing", 'echo "Chromium 1"\nexit 2\n')
    assert chromium_version(str(failing)) is None
    assert chromium_version(str(tmp_path / "missing")) is None
    hung = _script(tmp_path / "hung", "exec sleep 30\n")  # sync-ok: a command that never answers
    assert chromium_version(str(hung), timeout=0.2) is None


def test_a_commands_failure_in_one_line(tmp_path: Path) -> None:
    assert install._run([sys.executable, "-c", "pass"], 30) is None
    failing = [sys.executable, "-c", "import sys; print('a'); print(' last words '); sys.exit(3)"]
    assert install._run(failing, 30) == "exit 3: last words"
    to_stderr = [sys.executable, "-c", "import sys; sys.stderr.write('E: no root\\n\\n'); exit(1)"]
    assert install._run(to_stderr, 30) == "exit 1: E: no root"
    assert install._run([sys.executable, "-c", "exit(4)"], 30) == "exit 4: no output"
    assert install._run([str(tmp_path / "missing")], 30) == "No such file or directory"
    assert install._last_line("x" * 300 + "\n") == "x" * 200


def test_the_command_a_user_is_told_to_run() -> None:
    say = install._command_for_user
    assert say("/usr/bin/apt-get", True, playwright_failed=True) == "apt-get install -y chromium"
    assert say("/usr/bin/apt-get", False, playwright_failed=False) == (
        "sudo apt-get install -y chromium"
    )
    assert say(None, True, playwright_failed=False) == "python -m playwright install chromium"
    assert say(None, False, playwright_failed=True) == (
        "ACTONCE_CHROMIUM=/path/to/chromium actonce demo"
    )


def test_playwright_is_run_from_the_path_or_as_a_module(bare: Path) -> None:
    assert install._playwright_cmd() == [sys.executable, "-m", "playwright"]
    _script(bare / "playwright", "exit 0\n")
    assert install._playwright_cmd() == [str(bare / "playwright")]


def test_a_chromium_already_there_is_found_and_exported(
    bare: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chrome = _script(bare / "chromium", 'echo "Chromium 1.2"\n')
    lines: list[str] = []
    got = ensure_chromium(lines.append)
    assert got == Obtained(str(chrome), "Chromium 1.2", "found") and lines == []
    assert os.environ["ACTONCE_CHROMIUM"] == str(chrome)
    monkeypatch.setenv("ACTONCE_CHROMIUM", str(chrome))
    other = _script(bare / "elsewhere" / "chrome", "exit 0\n")
    monkeypatch.setenv("ACTONCE_CHROMIUM", str(other))
    assert ensure_chromium().path == str(other), "an explicit one is kept"


def test_with_installing_off_it_says_the_command(
    bare: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(BrowserNotFound) as caught:
        ensure_chromium(install=False)
    assert str(caught.value) == (
        "no Chromium found (installing is off): run `python -m playwright install chromium` "
        "or set ACTONCE_CHROMIUM to its path"
    )
    _script(bare / "apt-get", "exit 0\n")
    monkeypatch.setattr(install, "_is_root", lambda: False)
    with pytest.raises(BrowserNotFound, match=r"run `sudo apt-get install -y chromium` or"):
        ensure_chromium(install=False)


def test_playwrights_download_is_tried_first_and_said(
    bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chrome = tmp_path / "pw" / "chromium-7" / "chrome-linux" / "chrome"
    mkdir, chmod = shutil.which("mkdir") or "/bin/mkdir", shutil.which("chmod") or "/bin/chmod"
    body = f'echo "$@" > {tmp_path}/args\n{mkdir} -p {chrome.parent}\n'
    body += f"printf '#!{SH}\\necho \"Chromium 7\"\\n' > {chrome}\n{chmod} 755 {chrome}\n"
    _script(bare / "playwright", body)
    monkeypatch.setattr(install, "_is_root", lambda: True)
    lines: list[str] = []
    got = ensure_chromium(lines.append)
    assert (got.path, got.version, got.how) == (str(chrome), "Chromium 7", "playwright")
    assert (tmp_path / "args").read_text(encoding="utf-8") == "install chromium\n"
    assert lines[0] == (
        "no Chromium found: trying Playwright's download (playwright install chromium) ..."
    )
    assert lines[1].startswith(f"installed Chromium 7 at {chrome} with Playwright's download (")
    took = lines[1].rsplit("(", 1)[1]
    assert took.endswith(" s)") and took[:-3].isdigit() and len(lines) == 2, lines
    assert os.environ["ACTONCE_CHROMIUM"] == str(chrome)


def test_a_download_that_leaves_no_chromium_falls_to_apt_get_as_root(
    bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _script(bare / "playwright", "exit 0\n")  # says it worked, leaves nothing
    _script(
        bare / "apt-get",
        f'echo "$@" >> {tmp_path}/apt\necho "E: Unable to locate" >&2\n'
        'case "$1" in install) exit 100 ;; esac\n',
    )
    monkeypatch.setattr(install, "_is_root", lambda: True)
    lines: list[str] = []
    with pytest.raises(BrowserNotFound) as caught:
        ensure_chromium(lines.append)
    assert str(caught.value) == (
        "no Chromium found and none could be installed (Playwright's download failed: no "
        "Chromium after it; apt-get failed: exit 100: E: Unable to locate): run "
        "`apt-get install -y chromium`"
    )
    assert (tmp_path / "apt").read_text(encoding="utf-8") == (
        "update -qq\ninstall -y -qq chromium\n"
    )
    assert lines[1] == (
        "Playwright's download failed: no Chromium after it; installing Debian's chromium with "
        "apt-get (apt-get update, apt-get install -y chromium; a minute or two) ..."
    )


def test_an_apt_get_that_installs_nothing_and_one_whose_update_fails(
    bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _script(bare / "playwright", 'echo "Error: Download failure" >&2\nexit 1\n')
    _script(bare / "apt-get", "exit 0\n")
    monkeypatch.setattr(install, "_is_root", lambda: True)
    with pytest.raises(BrowserNotFound) as caught:
        ensure_chromium()
    assert str(caught.value) == (
        "no Chromium found and none could be installed (Playwright's download failed: exit 1: "
        "Error: Download failure; apt-get failed: no chromium on PATH after it): run "
        "`apt-get install -y chromium`"
    )
    _script(bare / "apt-get", f'echo "$@" >> {tmp_path}/apt\necho "E: no network"\nexit 2\n')
    with pytest.raises(BrowserNotFound, match=r"apt-get failed: exit 2: E: no network\)"):
        ensure_chromium()
    assert (tmp_path / "apt").read_text(encoding="utf-8") == "update -qq\n", "no install after it"


def test_without_root_or_apt_get_it_says_what_to_run(
    bare: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _script(bare / "playwright", "exit 1\n")
    monkeypatch.setattr(install, "_is_root", lambda: False)
    with pytest.raises(BrowserNotFound) as caught:
        ensure_chromium()
    assert str(caught.value) == (
        "no Chromium found and none could be installed (Playwright's download failed: exit 1: "
        "no output): install Chromium with your system's package manager, then run "
        "`ACTONCE_CHROMIUM=/path/to/chromium actonce demo`"
    )
    _script(bare / "apt-get", "exit 0\n")
    with pytest.raises(BrowserNotFound) as caught:
        ensure_chromium()
    assert str(caught.value) == (
        "no Chromium found and none could be installed (Playwright's download failed: exit 1: "
        "no output; apt-get needs root): run `sudo apt-get install -y chromium`"
    )


def test_root_is_an_effective_user_id_of_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0, raising=False)
    assert install._is_root() is True
    monkeypatch.setattr(os, "geteuid", lambda: 1000, raising=False)
    assert install._is_root() is False


def test_the_sh_the_scripts_use_is_there() -> None:
    assert shutil.which("sh", path="/bin") == SH


def test_apt_get_as_root_installs_it_and_says_how_long(
    bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _script(bare / "playwright", "exit 1\n")
    chrome = bare / "chromium"
    body = f'case "$1" in install) printf \'#!{SH}\\necho "Chromium 9"\\n\' > {chrome}\n'
    body += (
        f"  {shutil.which('chmod', path='/usr/bin:/bin') or '/bin/chmod'} 755 {chrome} ;; esac\n"
    )
    _script(bare / "apt-get", body)
    monkeypatch.setattr(install, "_is_root", lambda: True)
    lines: list[str] = []
    got = ensure_chromium(lines.append)
    assert got == Obtained(str(chrome), "Chromium 9", "apt-get")
    assert lines[-1].startswith(
        f"installed Chromium 9 at {chrome} with `apt-get install -y chromium` ("
    )
    took = lines[-1].rsplit("(", 1)[1]
    assert took.endswith(" s)") and took[:-3].isdigit(), lines[-1]
    assert os.environ["ACTONCE_CHROMIUM"] == str(chrome)
