"""Runs reference scripts of tests/py in one Python process, so that a test process that asks for
many references (a scheduler's schedule per test, an optimizer's ten steps per test) imports torch
once instead of once a reference (~1.3 s of each call on a 2-core VM). Started and fed by
tests/support/python_worker.h.

usage: serve.py    then one JSON request a line on stdin:
  {"script": "schedule.py", "args": ["..."]}
runs the script's main() as `python3 tests/py/SCRIPT ARGS...` would (sys.argv, stdout and stderr
captured; SystemExit's code, 1 and the traceback on an exception, its import's included)
and answers one JSON line on the original stdout: {"code": 0, "out": "...", "err": "..."}.
The scripts it runs keep no state between calls that changes their results (each reads its inputs
from its arguments and files); a script is imported once, as a fresh process would import it.
"""
import contextlib
import importlib
import io
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def call(request):
    script = request["script"]
    argv = sys.argv
    out, err = io.StringIO(), io.StringIO()
    code = 0
    try:
        sys.argv = [script] + list(request.get("args", []))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                result = importlib.import_module(os.path.splitext(script)[0]).main()
                code = result if isinstance(result, int) else 0
            except SystemExit as e:
                if e.code is None or isinstance(e.code, int):
                    code = e.code or 0
                else:
                    print(e.code, file=sys.stderr)
                    code = 1
            except Exception:  # as an uncaught exception ends `python3 SCRIPT`: traceback, exit 1
                traceback.print_exc()
                code = 1
    finally:
        sys.argv = argv
    return {"code": code, "out": out.getvalue(), "err": err.getvalue()}


def main():
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what a library writes to fd 1 itself goes to stderr, not into the answers
    for line in sys.stdin:
        answers.write(json.dumps(call(json.loads(line))) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
