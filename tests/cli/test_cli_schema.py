"""One JSON schema for every command (docs/gradcli.schema.json), and `--lines` on every command
that answers one program: each answer carries its input line's number."""
import json
from pathlib import Path

import jsonschema
import pytest

from cli_helpers import invoke, strict

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "gradcli.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
SOFTMAX = str(ROOT / "samples" / "naive_softmax.expr")

# every command, as a user would run it; the command's own key
COMMANDS = {
    "eval": (["eval", "-e", "x = [1.0, 2.0]; h = x * 2; y = sum(h)", "--print", "h", "--print", "y"], None),
    "grad": (["grad", "-e", "z = b * 2; y = sum(a * a)", "--wrt", "a", "--wrt", "b", "--set", "a=[1, 2]",
              "--set", "b=3"], "gradients"),
    "check": (["check", "-e", "y = sum(tanh(x) * x)", "--wrt", "x", "--set", "x=[0.3, 1.2]"], "check"),
    "jacobian": (["jacobian", "-e", "y = x * x", "--of", "y", "--wrt", "x", "--set", "x=[1, 2]"], "jacobians"),
    "hessian": (["hessian", "-e", "f = x * x * y + y ** 3", "--wrt", "x", "--wrt", "y", "--set", "x=1",
                 "--set", "y=2"], "hessians"),
    "derive": (["derive", "-e", "y = sin(x) * x", "--wrt", "x"], "derivative"),
    "graph": (["graph", "-e", "x = [1000.0, 1.0]\ny = exp(x - stop_gradient(max(x))) + exp(x)", "--wrt", "x"],
              "graph"),
    "fix": (["fix", "-e", "x = [1000.0, 1.0]\ny = log(1 + exp(x))"], "fixed"),
}




def valid(doc):
    errors = sorted(VALIDATOR.iter_errors(doc), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)
    return doc


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_json_has_the_same_top_level_and_follows_the_schema(command):
    args, own = COMMANDS[command]
    r = invoke(*args, "--format", "json")
    assert r.exit_code == 0, r.output
    doc = valid(strict(r.stdout))
    keys = list(doc)
    assert keys[:2] == ["command", "outputs"] and keys[-1] == "diagnostics" and doc["command"] == command
    if own:
        assert own in doc


def test_the_schema_refuses_what_is_not_an_answer():
    assert list(VALIDATOR.iter_errors({"outputs": {}, "diagnostics": []}))  # no command
    assert list(VALIDATOR.iter_errors({"command": "grad", "outputs": {}, "diagnostics": []}))  # no gradients
    assert list(VALIDATOR.iter_errors({"command": "eval", "outputs": {"y": {"shape": [], "value": 1.0}},
                                       "diagnostics": []}))  # a tensor without its dtype


def test_json_of_diagnostics_fixes_and_non_finite_numbers_follows_the_schema():
    r = invoke("eval", SOFTMAX, "--format", "json")
    doc = valid(strict(r.stdout))
    assert doc["outputs"]["y"]["value"] == ["NaN"] * 3 and any("fix" in d for d in doc["diagnostics"])
    r = invoke("check", "-e", "y = sum(sqrt(x))", "--wrt", "x", "--set", "x=[0.0, 1.0]", "--format", "json")
    valid(strict(r.stdout))


def test_check_reports_the_values_it_checked_under_outputs():
    doc = strict(invoke(*COMMANDS["check"][0], "--format", "json").stdout)
    assert doc["outputs"]["y"]["shape"] == [] and doc["check"]["x"]["passed"] is True


def test_derive_and_graph_json():
    doc = strict(invoke(*COMMANDS["derive"][0], "--format", "json").stdout)
    assert doc["outputs"] == {} and doc["derivative"]["of"] == ["y"] and doc["derivative"]["wrt"] == "x"
    assert doc["derivative"]["program"].splitlines()[-1] == "dy_dx = sin(x) + x * cos(x)"
    doc = strict(invoke(*COMMANDS["graph"][0], "--format", "json").stdout)
    nodes = {n["id"]: n for n in doc["graph"]["nodes"]}
    assert doc["graph"]["root"] in nodes and list(doc["outputs"]) == ["y"]
    assert all(e["from"] in nodes and e["to"] in nodes for e in doc["graph"]["edges"])
    (cut,) = [e for e in doc["graph"]["edges"] if e["stop_gradient"]]
    assert nodes[cut["to"]]["op"] == "stop_gradient"
    assert {n["label"] for n in nodes.values() if not n["finite"]} == {"exp", "y = +"}
    (x,) = [n for n in nodes.values() if n["label"] == "input x"]
    assert x["gradient"]["shape"] == [2]


def test_fix_json_has_the_program_and_the_fixes_it_applied():
    doc = strict(invoke(*COMMANDS["fix"][0], "--format", "json").stdout)
    assert doc["outputs"] == {} and doc["fixed"]["program"] == "x = [1000.0, 1.0]\ny = softplus(x)\n"
    (applied,) = doc["fixed"]["applied"]
    assert (applied["start"], applied["end"], applied["replacement"], applied["kind"]) == (
        [2, 5], [2, 20], "softplus(x)", "overflow")
    r = invoke("fix", "-e", "y = exp(x)", "--set", "x=1000", "--format", "json")
    doc = valid(strict(r.stdout))
    assert r.exit_code == 1 and doc["fixed"]["not_finite"] == ["y"] and doc["diagnostics"]


def test_format_means_the_same_on_every_command():
    for command, (args, _) in COMMANDS.items():
        plain = invoke(*args, "--format", "plain")
        assert plain.exit_code == 0 and plain.stdout and "\x1b[" not in plain.stdout, command
        table = invoke(*args, "--format", "table")
        assert table.exit_code == 0 and table.stdout, command
        auto = invoke(*args)  # not a terminal: plain
        assert auto.stdout == plain.stdout, command
    r = invoke("graph", "-e", "y = 2.0 * 3.0", "--format", "tree")  # the table's old name
    assert r.exit_code == 0 and "y = *" in r.stdout


# --------------------------------------------------------------------------- --lines

LINES = {  # a good line, a blank one, a bad one, a good one
    "eval": (["eval"], "exp(0.0)\n\na * 3\nx = 2.0; x * 3\n"),
    "grad": (["grad", "--wrt", "x"], "x = [1.0, 2.0]; y = sum(x * x)\n\ny = q\nx = 3.0; y = x * x\n"),
    "check": (["check", "--wrt", "x"], "x = [0.5, 1.0]; y = sum(sin(x))\n\ny = x +\nx = 2.0; y = x ** 3\n"),
    "jacobian": (["jacobian", "--wrt", "x"], "x = [1.0, 2.0]; y = x * x\n\ny = (\nx = 3.0; y = x * 2\n"),
    "hessian": (["hessian", "--wrt", "x"], "x = [1.0, 2.0]; y = sum(x ** 3)\n\ny = x[\nx = 1.0; y = x ** 4\n"),
    "derive": (["derive", "--wrt", "x"], "y = sin(x) * x\n\ny = )\ny = x * x\n"),
}


@pytest.mark.parametrize("command", LINES)
def test_lines_answers_carry_their_line_numbers_and_follow_the_schema(command):
    args, stdin = LINES[command]
    r = invoke(*args, "--lines", stdin=stdin)
    docs = [valid(strict(line)) for line in r.stdout.splitlines()]
    assert [d["line"] for d in docs] == [1, 3, 4]  # the blank line 2 is counted, not answered
    assert {d["command"] for d in docs} == {command}
    assert "error" in docs[1] and docs[1]["error"]["line"] == 3 and "<line 3>" in docs[1]["error"]["text"]
    assert "error" not in docs[0] and "error" not in docs[2]
    assert r.exit_code == 2


def test_lines_plain_is_one_numbered_tab_separated_line_per_result():
    r = invoke("eval", "--lines", "--format", "plain", stdin="exp(0.0)\n\na * 3\nx = [1.0, 2.0]; y = x * 3\n")
    # a bad line is answered in its place too, so a reader of the lines keeps count
    assert r.stdout == "1\t_\t1.0\n3\t#error\tmissing input 'a': give it with --set a=VALUE\n4\ty\t3.0 6.0\n"
    assert r.exit_code == 2 and "<line 3>:1:1: error: missing input 'a'" in r.stderr
    r = invoke("grad", "--wrt", "x", "--wrt", "z", "--lines", "--format", "plain",
               stdin="x = [1.0, 2.0]; z = 1.0; y = sum(x * x)\n")
    assert (r.exit_code, r.stdout) == (0, "1\tx\t2.0 4.0\n1\tz\t\n")
    r = invoke("hessian", "--wrt", "x", "--wrt", "y", "--lines", "--format", "plain",
               stdin="x = 1.0; y = 2.0; f = x * x * y\n")
    assert r.stdout == "1\tx\t4.0\n1\ty\t0.0\n1\tx,y\t2.0\n1\ty,x\t2.0\n"
    r = invoke("check", "--wrt", "x", "--lines", "--format", "plain", stdin="\nx = 1.0; y = x * x\n")
    assert r.stdout.startswith("2\tx\tpassed\t")


def test_lines_refuses_what_it_cannot_answer_one_line_at_a_time():
    r = invoke("eval", "--lines", "--format", "table", stdin="1\n")
    assert (r.exit_code, r.stdout) == (2, "")
    assert "--lines answers in json or plain lines, not --format table" in r.stderr
    r = invoke("derive", "--wrt", "x", "--lines", "--format", "plain", stdin="y = x * x\n")
    assert r.exit_code == 2 and "use --format json" in r.stderr


def test_lines_check_that_fails_exits_1():
    r = invoke("check", "--wrt", "x", "--lines", "--eps", "0.5", "--rtol", "0", "--atol", "0",
               stdin="x = 1.0; y = x ** 3\n")
    (doc,) = [strict(line) for line in r.stdout.splitlines()]
    assert doc["check"]["x"]["passed"] is False and r.exit_code == 1


# --------------------------------------------------------------------------- thin commands over the library

def test_the_library_names_its_own_arguments_and_the_cli_names_the_flags():
    from gradcli import api
    with pytest.raises(api.OptionError) as caught:
        api.grad("y = x * 2", wrt=["q"], feeds={"x": 1.0})
    assert caught.value.option == "wrt" and str(caught.value).startswith("unknown name for wrt 'q'")
    with pytest.raises(api.OptionError, match="^eps must be positive, not -1$"):
        api.check("y = x * x", wrt=["x"], feeds={"x": 1.0}, eps=-1.0)
    with pytest.raises(api.OptionError, match="^unknown name for prints 'z'"):
        api.evaluate("y = 1", prints=["z"])
    cases = [(["grad", "-e", "y = x * 2", "--wrt", "q", "--set", "x=1"], "unknown name for --wrt 'q'"),
             (["eval", "-e", "y = 1", "--print", "z"], "unknown name for --print 'z'"),
             (["check", "-e", "y = x * x", "--wrt", "x", "--set", "x=1", "--eps", "-1"], "--eps must be positive"),
             # an infinite tolerance would pass any gradient (and 0 * inf leaked a RuntimeWarning: the fuzz)
             (["check", "-e", "y = x * 0", "--wrt", "x", "--set", "x=0", "--rtol", "inf"], "--rtol must be finite, not inf"),
             (["check", "-e", "y = x * 0", "--wrt", "x", "--set", "x=0", "--atol", "inf"], "--atol must be finite, not inf"),
             (["check", "-e", "y = x * 0", "--wrt", "x", "--set", "x=0", "--eps", "inf"], "--eps must be finite, not inf"),
             (["grad", "-e", "y = x * 2", "--wrt", "x", "--set", "x=1", "--grad-ys", "z=1"],
              "--grad-ys z: 'z' is not a differentiated output (those are y)"),
             (["derive", "-e", "y = x * x", "--set", "x=1"], "derive takes one --wrt NAME")]
    for args, message in cases:
        r = invoke(*args)
        assert r.exit_code == 2 and f"gradcli: error: {message}" in r.stderr, (args, r.stderr)
    r = invoke("jacobian", "--wrt", "q", "--lines", stdin="x = 1.0; y = x\n")  # in an answer too
    assert strict(r.stdout)["error"]["message"].startswith("unknown name for --wrt 'q'")


def test_every_view_is_a_command_the_schema_knows():
    """CONTRIBUTING.md's steps to add a command stay true: a View in render.py, a command of its
    name, and its name in the schema (and a case in this file)."""
    from gradcli.cli import render
    from gradcli.cli import app as the_app
    views = {v.command for v in vars(render).values() if isinstance(v, render.View)} | {render.fix_view(False).command}
    assert views == set(SCHEMA["$defs"]["command"]["enum"]) == set(COMMANDS)
    assert views <= {c.name for c in the_app.registered_commands}


def test_lines_reads_the_set_values_once_and_every_line_sees_them_unchanged():
    program = "y = exp(x) * 2 + x\nz = x * x; y = sin(z) + x\ny = exp(x) * 2 + x\ny = x\n"
    r = invoke("eval", "--set", "x=[1.0, 2.0]", "--lines", "--format", "plain", stdin=program)
    rows = [line.split("\t") for line in r.stdout.splitlines()]
    assert rows[0][1:] == rows[2][1:]  # line 3 is line 1 again: x was not written over
    assert rows[3] == ["4", "y", "1.0 2.0"] and r.exit_code == 0
