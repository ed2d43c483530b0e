"""``python -m gradlab run``: the course's failure patterns as scripts, run in a subprocess.

Each script in tests/scripts fails (or succeeds) the way a learner's training
script does. The runner must behave like ``python`` (exit code, stdout,
traceback) and add gradlab's diagnosis and explanation to autograd errors.

A subprocess costs about a second (it imports torch): a run of the same command
in the same folder is made once and shared between the tests that read it
(:func:`_python`), and what needs no process of its own (``explain`` on a text,
``--help``, ``--version``) runs in this one through :func:`gradlab.cli.main`.
"""

from __future__ import annotations

import functools
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import gradlab_spoke

from gradlab.cli import USAGE, explain_text, main

pytestmark = [pytest.mark.library, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent / "scripts"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("PYTHONSTARTUP", None)
    return env


def _python(*args: str, cwd: Path = ROOT, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``python ARGS`` in ``cwd``; the same command in the same folder runs once per test session."""
    return _run(tuple(args), cwd, stdin)


@functools.cache
def _run(args: tuple[str, ...], cwd: Path, stdin: str | None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=_env(), input=stdin, capture_output=True, text=True, timeout=300
    )


def gradlab_run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return _python("-m", "gradlab", "run", *args, cwd=cwd)


def line_of(script: str, code: str) -> int:
    """The number of the first line of ``script`` that is ``code`` (indentation aside)."""
    lines = (SCRIPTS / script).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.strip() == code)


# -- the course's failure patterns ------------------------------------------------------

# (script, kind, named tensor, shape in the message, offending line)
PATTERNS = [
    ("chained_inplace.py", "modified_in_place", "n_1.2.weight", "[10, 1]", "opt_1.step()"),
    ("gan.py", "modified_in_place", "discriminator.2.weight", "[8, 1]", "opt_d.step()"),
    ("actor_critic.py", "modified_in_place", "critic.2.weight", "[16, 1]", "opt_critic.step()"),
    ("relu_inplace.py", "modified_in_place", "relu_", "[5, 4]", "loss = model(x).pow(2).mean()"),
    ("chained_freed.py", "graph_freed", None, None, "loss_1.backward()"),
    ("rnn_hidden.py", "graph_freed", None, None, "loss.backward()"),
]


@pytest.mark.parametrize("script,kind,tensor,shape,offending", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_autograd_failure_is_diagnosed(script, kind, tensor, shape, offending) -> None:
    r = gradlab_run(str(SCRIPTS / script))
    assert r.returncode == 1, r.stderr
    err = r.stderr
    assert err.startswith("Traceback (most recent call last):")
    assert f'{script}", line' in err  # the script's own frame is in the traceback
    assert "RuntimeError: " in err
    title = {"modified_in_place": "GL0002 modified in place", "graph_freed": "GL0001 graph freed"}[kind]
    assert f"\ngradlab: error[{title}]: " in err  # the tracker's diagnosis note
    assert "\nhelp: " in err and "   = trains: " in err
    assert err.count("gradlab: error[") == 1  # no second explanation by default: it is in --verbose
    if tensor is not None:
        assert tensor in err
    if shape is not None:
        assert f"FloatTensor {shape}]" in err and shape in err
    if offending is not None:
        line = line_of(script, offending)
        assert f"--> tests/scripts/{script}:{line}\n" in err and f"{line} |     {offending}" in err
    if script == "rnn_hidden.py":
        assert r.stdout == "batch 0 done\n"  # the second batch fails
    # the note comes after the traceback's message
    assert err.index("RuntimeError: ") < err.index(f"gradlab: error[{title}]")


@pytest.mark.parametrize("script", [p[0] for p in PATTERNS])
def test_autograd_traceback_is_pythons_then_the_note(script: str) -> None:
    """The traceback and the exception line equal plain python's, byte for byte; gradlab adds only its note."""
    plain = _python(str(SCRIPTS / script))
    ours = gradlab_run(str(SCRIPTS / script))
    head, sep, _ = ours.stderr.partition("\ngradlab: error[")
    assert sep, ours.stderr
    assert head.rstrip("\n") + "\n" == plain.stderr


def test_verbose_adds_every_fix_and_the_message_decoded() -> None:
    r = gradlab_run("--verbose", str(SCRIPTS / "chained_inplace.py"))
    assert r.returncode == 1
    err = r.stderr
    assert err.index("gradlab: error[GL0002 modified in place]") < err.index("Fixes, by what you want to train:")
    assert "If loss_2 should also train n_1:" in err and "allow_mutation_on_saved_tensors" in err
    assert "\ngradlab: error[GL0002 modified in place]\n" in err and "What the message says:" in err


def test_explain_only_runs_without_tracking() -> None:
    r = gradlab_run("--explain-only", str(SCRIPTS / "chained_inplace.py"))
    assert r.returncode == 1
    assert "gradlab: error[GL0002 modified in place]: " in r.stderr
    assert r.stderr.count("gradlab: error[") == 1  # the message explained; no tracker, no diagnosis note
    assert "n_1.2.weight" not in r.stderr and "  --> " not in r.stderr
    assert "[torch.FloatTensor [10, 1]]" in r.stderr


# -- behaves like python ---------------------------------------------------------------


def test_success_is_identical_to_python() -> None:
    args = ("first", "--lr", "0.1")
    plain = _python(str(SCRIPTS / "succeeds.py"), *args)
    ours = gradlab_run(str(SCRIPTS / "succeeds.py"), *args)
    assert (ours.returncode, ours.stdout, ours.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    assert plain.returncode == 0
    assert "name __main__\n" in ours.stdout
    assert "argv ['first', '--lr', '0.1'] succeeds.py\n" in ours.stdout
    assert "path0 scripts\n" in ours.stdout


def test_relative_script_path_and_cwd() -> None:
    plain = _python("succeeds.py", cwd=SCRIPTS)
    ours = gradlab_run("succeeds.py", cwd=SCRIPTS)
    assert (ours.returncode, ours.stdout) == (plain.returncode, plain.stdout) == (0, plain.stdout)


def test_sys_exit_code() -> None:
    r = gradlab_run(str(SCRIPTS / "exit3.py"))
    assert (r.returncode, r.stdout, r.stderr) == (3, "before exit\n", "")


def test_value_error_is_printed_like_python() -> None:
    plain = _python(str(SCRIPTS / "value_error.py"))
    ours = gradlab_run(str(SCRIPTS / "value_error.py"))
    assert ours.returncode == plain.returncode == 1
    assert ours.stdout == plain.stdout == "loading\n"
    assert ours.stderr == plain.stderr
    assert ours.stderr.rstrip().endswith("ValueError: n must be >= 0, got -1")


def test_torch_error_under_tracking_is_printed_like_python(tmp_path: Path) -> None:
    script = tmp_path / "shapes.py"
    script.write_text("import torch\nlin = torch.nn.Linear(3, 2)\nlin(torch.ones(4, 5))\n")
    plain = _python(str(script))
    ours = gradlab_run(str(script))
    assert ours.returncode == plain.returncode == 1
    assert ours.stderr == plain.stderr  # no frames of gradlab's hooks
    assert "mat1 and mat2 shapes cannot be multiplied" in ours.stderr


def test_a_warning_from_inside_the_backward_is_printed_like_python(tmp_path: Path) -> None:
    """torch's full-backward-hook warning walks stacklevel=5 frames out of the hook, meant to reach the line that
    called Tensor.backward; gradlab's backward wrapper must not shorten that walk (NOTE [Warnings keep the user's
    frame]). Two lines warn once each, and torch.autograd.backward called directly reaches past the script's first
    frame: "sys:1" ("<sys>:0" from Python 3.13), as under python."""
    script = tmp_path / "hooked.py"
    script.write_text(
        "import torch\n"
        "m = torch.nn.Linear(3, 2)\n"
        "m.register_full_backward_hook(lambda mod, gi, go: None)\n"
        "x = torch.randn(4, 3)\n"
        "for _ in range(2):\n"
        "    m(x).sum().backward()\n"
        "m(x).pow(2).sum().backward()\n"
        "torch.autograd.backward(m(x).sum())\n"
    )
    plain = _python(str(script))
    ours = gradlab_run(str(script))
    assert (ours.returncode, ours.stdout, ours.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    assert [line.split(": UserWarning")[0] for line in plain.stderr.splitlines() if "UserWarning" in line] == [
        f"{script}:6",
        f"{script}:7",
        "<sys>:0" if sys.version_info >= (3, 13) else "sys:1",
    ]


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "no_such_script.py"
    r = gradlab_run(str(missing))
    assert r.returncode == 2
    assert f"can't open file '{missing}': [Errno 2] No such file or directory" in r.stderr
    assert r.stderr == _python(str(missing)).stderr


def test_syntax_error(tmp_path: Path) -> None:
    bad = tmp_path / "broken.py"
    bad.write_text("x = 1\ndef f(:\n    pass\n")
    plain = _python(str(bad))
    ours = gradlab_run(str(bad))
    assert ours.returncode == plain.returncode == 1
    assert ours.stderr == plain.stderr
    assert "SyntaxError" in ours.stderr and not gradlab_spoke(ours.stderr)


def test_run_module(tmp_path: Path) -> None:
    (tmp_path / "trainmod.py").write_text((SCRIPTS / "chained_inplace.py").read_text())
    r = gradlab_run("-m", "trainmod", cwd=tmp_path)
    assert r.returncode == 1
    assert "gradlab: error[GL0002 modified in place]" in r.stderr
    assert f"--> trainmod.py:{line_of('chained_inplace.py', 'opt_1.step()')}\n" in r.stderr
    assert "n_1.2.weight" in r.stderr

    (tmp_path / "ok.py").write_text("import sys\nprint(__name__, sys.argv[1:])\n")
    r = gradlab_run("-m", "ok", "a", "b", cwd=tmp_path)
    assert (r.returncode, r.stdout) == (0, "__main__ ['a', 'b']\n")

    r = gradlab_run("-m", "no_such_module_here", cwd=tmp_path)
    assert r.returncode == 1 and "No module named no_such_module_here" in r.stderr


# -- explain, help and usage -------------------------------------------------------------


MESSAGE = (
    "RuntimeError: one of the variables needed for gradient computation has been modified "
    "by an inplace operation: [torch.cuda.FloatTensor [64, 1]] is at version 3; expected "
    "version 2 instead.\n"
)


class _Stdin(io.StringIO):
    """stdin with ``text`` to read, as a terminal (``tty=True``) or a pipe."""

    def __init__(self, text: str, tty: bool = False) -> None:
        super().__init__(text)
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_explain_from_stdin_and_file(tmp_path: Path, monkeypatch, capsys) -> None:
    r = _python("-m", "gradlab", "explain", stdin=MESSAGE)  # once through a real pipe
    assert (r.returncode, r.stderr) == (0, "") and r.stdout.startswith("gradlab: error[GL0002 modified in place]: ")
    f = tmp_path / "tb.txt"
    f.write_text(MESSAGE)
    assert main(["explain", "--file", str(f)]) == 0
    assert capsys.readouterr().out == r.stdout
    monkeypatch.setattr(sys, "stdin", _Stdin("KeyError: 'x'\n"))
    assert main(["explain"]) == 1
    assert "gradlab: not decoded" in capsys.readouterr().out
    monkeypatch.setattr(sys, "stdin", _Stdin(MESSAGE))
    assert main(["explain", "--verbose"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("gradlab: error[GL0002 modified in place]\n") and "2 -> 3" in out


def test_explain_prompts_on_a_terminal_only(monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "stdin", _Stdin(MESSAGE, tty=True))
    assert main(["explain"]) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith("Paste the traceback") and "Ctrl-D" in captured.err
    assert captured.out.startswith("gradlab: error[GL0002 modified in place]: ")  # the prompt stays off stdout
    monkeypatch.setattr(sys, "stdin", _Stdin(MESSAGE, tty=False))
    assert main(["explain"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("closed", ["none", "closed"])
def test_explain_with_closed_stdin_says_what_to_pass(closed: str, monkeypatch, capsys) -> None:
    stdin = None if closed == "none" else _Stdin(MESSAGE)  # `0<&-`: Python starts with sys.stdin None
    if stdin is not None:
        stdin.close()
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["explain"]) == 2
    err = capsys.readouterr().err
    assert "stdin is closed" in err and "--file TRACEBACK.txt" in err and "Traceback" not in err


def test_explain_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    """``python -m gradlab explain --verbose < tb.txt | head -1``, with the reader gone before the first write."""
    f = tmp_path / "tb.txt"
    f.write_text(MESSAGE)
    read, write = os.pipe()
    os.close(read)  # every write now fails with EPIPE, at once and every time
    try:
        with f.open() as stdin:
            r = subprocess.run(
                [sys.executable, "-m", "gradlab", "explain", "--verbose"],
                cwd=ROOT,
                env=_env(),
                stdin=stdin,
                stdout=write,
                stderr=subprocess.PIPE,
                text=True,
                timeout=300,
            )
    finally:
        os.close(write)
    assert (r.returncode, r.stderr) == (1, "")


def test_version(capsys) -> None:
    import platform
    from importlib import metadata

    import gradlab

    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"gradlab {gradlab.__version__} (torch-gradlab; Python {platform.python_version()}, ")
    assert f"torch {metadata.version('torch')})" in out
    assert main(["-V"]) == 0
    assert capsys.readouterr().out == out


def test_help_and_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert capsys.readouterr().out == USAGE
    assert main([]) == 2
    assert main(["run"]) == 2
    assert "run needs a script" in capsys.readouterr().err
    assert main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err
    assert main(["train.py"]) == 2
    assert "python -m gradlab run train.py" in capsys.readouterr().err
    with pytest.raises(TypeError, match="list of str"):
        main([3])  # type: ignore[list-item]


def test_explain_text_in_process() -> None:
    out = io.StringIO()
    assert explain_text("element 0 of tensors does not require grad and does not have a grad_fn", out) == 0
    assert out.getvalue().startswith("gradlab: error[GL0003 no grad_fn]: ")


def test_cli_explain_code_prints_the_long_form() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "gradlab", "explain", "GL0008"], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("gradlab: error[GL0008 multi-view in place]\n")
    assert "Fixes, by what you want to train:" in r.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "gradlab", "explain", "GL0999"], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert bad.returncode == 2 and "GL0001 to GL" in bad.stderr
