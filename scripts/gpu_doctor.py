"""Rule gpu_doctor: smattn.doctor --require-gpu on the job's node; its report is the output, and the job fails when
torch or JAX sees no GPU."""

import contextlib
import io as stdio

from smattn.doctor import main as doctor
from smattn.io import write_text
from smattn.scriptio import run


def main(io):
    buf = stdio.StringIO()
    with contextlib.redirect_stdout(buf):
        status = doctor(["--require-gpu"])
    print(buf.getvalue(), end="")
    if status != 0:
        raise SystemExit(f"gpu_doctor: a GPU is required but not seen by both torch and JAX:\n{buf.getvalue()}")
    write_text(io.output.report, buf.getvalue())


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
