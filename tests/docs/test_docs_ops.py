"""docs/ops.md, the list of operations, is made from the op records and never stale."""
import subprocess
import sys
from pathlib import Path

from gradcli.ops import OPS

ROOT = Path(__file__).resolve().parents[2]


def test_the_op_reference_is_up_to_date():
    """Regenerate it with: python tools/gen.py --ops > docs/ops.md"""
    made = subprocess.run([sys.executable, str(ROOT / "tools" / "gen.py"), "--ops"], capture_output=True, text=True,
                          timeout=120)
    assert made.returncode == 0, made.stderr
    assert (ROOT / "docs" / "ops.md").read_text() == made.stdout


def test_the_op_reference_lists_every_callable_op_once_with_its_doc():
    text = (ROOT / "docs" / "ops.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    names = [row.split("`")[1] for row in rows]
    public = [op for op in OPS.values() if op.public]
    assert sorted(names) == sorted(op.name for op in public)
    documented = [op for op in public if op.doc]
    assert len(documented) > 300  # most records say what they compute
    for op in documented:
        assert op.doc.replace("|", "\\|") in rows[names.index(op.name)], op.name
    assert f"{len(public)} operations." in text


def test_an_op_s_row_says_where_its_gradient_goes():
    text = (ROOT / "docs" / "ops.md").read_text()
    row = {line.split("`")[1]: line for line in text.splitlines() if line.startswith("| `")}
    assert row["where"].endswith("| x, y; none in condition |")  # the condition passes no gradient
    assert row["add"].endswith("| x, y |") and "`x + y`" in row["add"]
    assert row["stop_gradient"].endswith("| none |")
    assert row["mse_loss"].endswith("| its expansion's |")  # a composite: its gradient is its parts'
