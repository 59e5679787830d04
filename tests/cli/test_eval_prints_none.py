"""A program that prints `None` (an unconnected gradient): the text output says `None`, as
Python's print does; JSON keeps `null`."""
import json
import subprocess
import sys

# TensorFlow 2.21.0 prints `None` for a tape's gradient of a constant it was not told to watch
PROGRAM = ("import tensorflow as tf\nx = tf.constant(3.0)\nwith tf.GradientTape() as tape:\n"
           "    y = x * x\nprint(tape.gradient(y, x))\nprint(y)\n")


def gradcli(*args):
    done = subprocess.run([sys.executable, "-m", "gradcli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def test_plain_eval_prints_none_as_python_does():
    done = gradcli("eval", "-e", PROGRAM, "--format", "plain")
    assert (done.returncode, done.stdout) == (0, "tape.gradient(y, x)\tNone\ny\t9.0\n")


def test_the_table_says_none_and_json_keeps_null():
    done = gradcli("eval", "-e", PROGRAM, "--format", "table")
    assert done.returncode == 0
    row = next(line for line in done.stdout.splitlines() if "tape.gradient(y, x)" in line)
    assert row.split("│")[3].strip() == "None"
    done = gradcli("eval", "-e", PROGRAM, "--format", "json")
    assert json.loads(done.stdout)["outputs"]["tape.gradient(y, x)"] is None


def test_an_unconnected_grad_keeps_its_empty_line():
    # `grad --wrt` of an input the output does not depend on: the name and no numbers (docs/cli.md)
    done = gradcli("grad", "-e", "z = b * 2; y = a * a", "--wrt", "b", "--set", "a=1", "--set", "b=2",
                   "--format", "plain")
    assert (done.returncode, done.stdout) == (0, "b\t\n")
