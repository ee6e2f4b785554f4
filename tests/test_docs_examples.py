"""The Python examples in the docs run as written (```python blocks; ```py marks a fragment)."""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
EXAMPLES = [(path.name, i, block) for path in sorted(DOCS.rglob("*.md"))
            for i, block in enumerate(re.findall(r"```python\n(.*?)```", path.read_text(), re.S))]
#: Docs whose examples start Spark, which runs on Java: they count as Java tests.
ON_JAVA = {"spark.md"}


@pytest.mark.parametrize("name,index,code", [
    pytest.param(*example, marks=[pytest.mark.java] if example[0] in ON_JAVA else [])
    for example in EXAMPLES], ids=["%s#%d" % e[:2] for e in EXAMPLES])
def test_example_runs(name, index, code):
    exec(compile(code, "%s example %d" % (name, index), "exec"), {})
