"""The script harness, standalone (command line) and with a Snakemake-like object."""

from types import SimpleNamespace

import pytest

from smattn.scriptio import run


class Named(list):
    def __init__(self, **kw):
        super().__init__(kw.values())
        self._names = kw

    def items(self):
        return self._names.items()


def test_standalone(tmp_path):
    seen = {}

    def main(io):
        seen.update(inp=io.input.a, out=io.output.b, k=io.params.k, threads=io.threads)
        print("hello log")

    log = tmp_path / "x.log"
    run(main, None, ["--input", "a=in.txt", "--output", "b=out.txt", "--params", '{"k": [1, 2]}', "--log", str(log)])
    assert seen == {"inp": "in.txt", "out": "out.txt", "k": [1, 2], "threads": 1}
    text = log.read_text()
    assert "hello log" in text and "done in" in text


def test_snakemake_object_and_failure_logged(tmp_path):
    log = tmp_path / "y.log"
    smk = SimpleNamespace(
        input=Named(a="i"), output=Named(b="o"), params=Named(p=3), wildcards=Named(), threads=2, log=[str(log)]
    )

    def main(io):
        assert io.params.p == 3 and io.threads == 2
        raise ValueError("bad input x")

    with pytest.raises(ValueError):
        run(main, smk)
    assert "bad input x" in log.read_text() and "FAILED" in log.read_text()


def test_bad_params_json():
    with pytest.raises(SystemExit, match="not valid JSON"):
        run(lambda io: None, None, ["--params", "{nope"])
