"""The code blocks of docs/scripting.md run, in order, as one script (in a fresh
interpreter, in a scratch folder): the chapter's examples stay true."""

import re
import subprocess
import sys
from pathlib import Path

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "scripting.md"


def code_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_the_scripting_chapter_runs(tmp_path):
    blocks = code_blocks(DOCUMENT.read_text())
    assert len(blocks) >= 5
    script = tmp_path / "scripting.py"
    script.write_text("\n".join(blocks))
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                            text=True, timeout=170)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "refused:" in result.stdout and "continues from step_" in result.stdout
    assert (tmp_path / "runs" / "poiseuille" / "stats.csv").is_file()
