"""Every command on a page of the site, run or checked (issue 41: "every code block that is a command
or a recipe is run or trainrun check-ed by a test").

    python3 tests/docs/command_blocks.py SOURCE_DIR BUILD_DIR WORK_DIR

Reads every ```sh block of docs/ (the blocks that include docs/commands/*.sh are run by
Docs.NewcomerPathCommandsRun instead), joins continued lines, drops comments, and gives each
command to the first rule that takes it:

- `trainrun check|describe|list ...`: run as written (`check --download` without `--download`:
  the download needs the network); exit 0 required.
- any other `trainrun ...` (a training run, `eval`): `trainrun check` with the same recipe and
  overrides, exit 0 required (runs are what the rest of the suite does; a page's command is held
  to its recipe and overrides parsing, resolving and building), and what `check` says the run
  would do with its run folder must be to train: a page's command that another job's folder would
  refuse, or that would find its run finished, fails (the test runs this script in an empty folder
  and again where `make demo` left a finished quickstart). `trainrun shards` likewise, its
  own options taken off (an option it does not have stays and fails the check); the command
  itself is run by tests/cli/shards_test.cpp.
- `torchrun`, `python3 tests/py/torchrun.py`: its options parsed by torch's own parser
  (torch.distributed.run.get_args_parser), and the program after it by these rules.
- `srun`, `mpirun`: the program after the launcher's options by these rules (the launchers
  themselves are run by the Slurm/Mpirun tests, against a slurmctld and Open MPI they start).
- `make TARGET ...`: `make -n TARGET` in the source tree (the target exists and resolves).
- `scripts/tiled-fashion-mnist.py ...`: run as written in the work folder (the multi-label page's
  data, which its next commands check).
- `ctest -L LABEL`: `ctest -N -L LABEL` lists at least one test.
- a `#!/bin/bash` block (an sbatch script): `bash -n`, and its `srun` lines by the rules.
- the rest is listed in NOT_RUN with the reason and, where one does, the test that runs the same
  command; a command no rule and no NOT_RUN entry takes fails the check.

Prints one line per command: `PAGE:LINE: ran|checked|not run (why): COMMAND`; exits 1 when a
command failed or was not taken by any rule.
"""
import json
import os
import re
import shlex
import subprocess
import sys

SRC, BUILD, WORK = (os.path.abspath(a) for a in sys.argv[1:4])
TRAINRUN = os.path.join(BUILD, "trainrun")

# Commands that no rule runs here, matched in order against the command (its leading VAR=value
# assignments left out): why, and which test or CI stage runs the same command.
LIST_MODELS = "TimmModelsCli.ListAndDescribeShowThePretrainedConfig runs it; it builds every model, ~25 s"
TIMM_TRAIN_PY = "timm's train.py, the Python script the page starts from; its flags are mapped by Docs.PythonMappingRecipeChecks"
NOT_RUN = [
    (r"^cmake -S examples/custom_model -B build-model -DCMAKE_PREFIX_PATH=/opt/trainrun( && cmake --build build-model)?$",
     "Install.CustomModelPluginTrains configures and builds this plugin against an installed prefix"),
    (r"^cmake --build build-model$", "Install.CustomModelPluginTrains"),
    (r"^cmake --install build --prefix /opt/trainrun$", "the Install tests install the build into a prefix with cmake --install"),
    (r"^cmake -S \. -B build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build$",
     "what `make build` runs, the build every test run starts from"),
    (r"^cmake -S \. -B build-lt .*-DCMAKE_PREFIX_PATH=/path/to/libtorch",
     "scripts/archive-layout-check.sh (CI's stage) configures and builds against an archive-shaped LibTorch"),
    (r"^cmake (-S \. -B|--build) build-pip",
     "needs a pip torch (no pip here); scripts/gpu-check.sh builds against one on a GPU machine"),
    (r"^cd build && cpack -G DEB$", "Install.DebPackageDependsOnDebiansPackages runs cpack -G DEB"),
    (r"^sudo apt install \./trainrun_.*\.deb$", "scripts/deb-check.sh installs the .deb in a fresh Debian root"),
    (r"^apt-get (update|install libtorch-cuda-dev .*)$",
     "Debian 13's contrib/non-free CUDA packages: not in this machine's sources (docs/guides/gpu.md's table has the builds against them)"),
    (r"^scripts/gpu-check\.sh ", "needs a GPU machine; checked here with bash -n"),
    (r"^build/custom_loop( &)?$", "Distributed.CustomLoopExampleTrainsAndGathersEveryTestExample runs this pair of ranks"),
    (r"^apt-get install dataset-fashion-mnist python3-numpy python3-pil$",
     "scripts/setup.sh --test installs them (python3-pil with python3-torchvision); the tests run the script with them"),
    (r"^tensorboard --logdir ", "TensorBoard is not packaged in Debian; tests/logging/tfevents_test.cpp decodes the files it reads"),
]

report, failures = [], []


def say(page, line, how, command):
    report.append(f"{page}:{line}: {how}: {command}")


def run(cmd, **kw):
    return subprocess.run(cmd, cwd=kw.pop("cwd", WORK), capture_output=True, text=True, **kw)


def blocks():
    for root, _, files in os.walk(os.path.join(SRC, "docs")):
        for name in sorted(files):
            if not name.endswith(".md"):
                continue
            path = os.path.join(root, name)
            page = os.path.relpath(path, SRC)
            lines = open(path, encoding="utf-8").read().split("\n")
            i = 0
            while i < len(lines):
                if lines[i].strip() == "```sh":
                    start, body = i + 2, []
                    i += 1
                    while lines[i].strip() != "```":
                        body.append(lines[i])
                        i += 1
                    if not any("--8<--" in b for b in body):
                        yield page, start, body
                i += 1


def commands(start, body):
    """(line number, command) with continuations joined and comments dropped."""
    out, cur, at = [], "", None
    for n, raw in enumerate(body):
        text = raw.rstrip()
        if not cur and text.lstrip().startswith("#"):
            continue
        if "  #" in text:  # a trailing comment (the pages align them after two or more spaces)
            text = text[: text.index("  #")].rstrip()
        at = at if cur else start + n
        if text.endswith("\\"):
            cur += text[:-1] + " "
            continue
        cur += text
        if cur.strip():
            out.append((at, cur.strip()))
        cur = ""
    return out


def trainrun_args(words):
    """The arguments of a trainrun program in `words` (build/trainrun, trainrun, an installed one)."""
    for i, w in enumerate(words):
        if w in ("trainrun", "build/trainrun") or w.endswith("/bin/trainrun"):
            return words[i + 1 :]
    return None


def installed(path):
    # An installed recipe is a copy of the tree's: check the tree's.
    m = re.match(r"^/(?:opt/trainrun|usr|usr/local)/share/trainrun/(recipes/.*)$", path)
    return m.group(1) if m else path


def shards_recipe_args(words):
    """`trainrun shards`'s recipe and overrides: its options (runner/cli/main.cpp) taken off."""
    out, i = [], 0
    while i < len(words):
        if words[i] in ("--output", "--max-count", "--max-size", "--seed"):
            i += 2
            continue
        if words[i] != "--no-shuffle":
            out.append(words[i])
        i += 1
    return out


_ran = {}  # argv -> (exit code, stderr): a command several pages show runs once

# `trainrun shards` of these recipes is run as written (their data is here; Fashion-MNIST's
# 70,000 images take ~3 s), so that the page's next commands, which train from the shards, are
# checked against real shards in the working folder.
SHARDS_RUN = {"recipes/quickstart.yaml"}


def run_shards(page, line, command, args, env):
    out = os.path.join(WORK, args[args.index("--output") + 1])
    if os.path.commonpath([out, WORK]) != WORK:
        failures.append(f"{page}:{line}: {command}\n  writes outside the working folder")
        return
    if tuple(args) not in _ran:
        subprocess.run(["rm", "-rf", out])
        r = run([TRAINRUN] + args, env={**os.environ, **env, "HF_HUB_OFFLINE": "1"})
        _ran[tuple(args)] = (r.returncode, r.stderr.strip())
    code, err = _ran[tuple(args)]
    how = "ran"
    if code != 0:
        failures.append(f"{page}:{line}: {command}\n  exit {code}\n  {err}")
        how = "FAILED ran"
    say(page, line, how, command)


# trainrun commands that need data this machine cannot have: why, and the test that runs them.
TRAINRUN_NOT_RUN = [
    (r"^(build/)?trainrun push ",
     "needs the Hub and a write token; HubPush.APushedRunIsWhatTheHubClientDownloads pushes a finished run to the "
     "Hub stand-in on loopback and reads it back, the BadInput.Push* rows check each refusal"),
    (r"^(build/)?trainrun recipes/pets_resnet50d_shards\.yaml$",
     "needs the Oxford-IIIT Pet shards; Recipes/ShippedRecipe.RunsAsShippedWithItsPublishedWeights/pets_resnet50d_shards "
     "writes them (from a mirror of the images) with the page's first command and trains from them"),
]

# The commands that run several whole runs (under any launcher): why, and the tests that run them.
RUNS_AROUND_A_RUN = ("lr-find", "sweep", "cv")
RUNS_AROUND_A_RUN_WHY = ("several whole runs each; DocsAfterDemo.FindingSettingsCommandsPrintWhatThePageShows runs the "
                         "guide's own (its docs/commands/ files), the LrFind, Sweep and Cv tests every option")


def check_trainrun(page, line, command, args, env):
    for pattern, why in TRAINRUN_NOT_RUN:
        if re.match(pattern, command):
            say(page, line, "not run here (" + why + ")", command)
            return
    args = [installed(a) for a in args]
    if args and args[0] in RUNS_AROUND_A_RUN:
        say(page, line, "not run here (" + RUNS_AROUND_A_RUN_WHY + ")", command)
        return
    if args[:2] == ["list", "models"]:
        say(page, line, "not run here (" + LIST_MODELS + ")", command)
        return
    training = not args or args[0] not in ("check", "describe", "list", "eval", "predict", "export", "shards")
    if args and args[0] in ("check", "describe", "list"):
        how, argv = "ran", list(args)
        if "--download" in argv:
            argv.remove("--download")
            how = "ran without --download (the download needs the network)"
    else:
        rest = list(args[1:] if args and args[0] in ("eval", "predict", "export", "shards") else args)
        if "--checkpoint" in rest:  # eval's checkpoint: a run's; the recipe is what is checked
            k = rest.index("--checkpoint")
            del rest[k : k + 2]
        if args and args[0] == "shards":
            if rest and rest[0] in SHARDS_RUN and "--output" in args:
                return run_shards(page, line, command, args, env)
            rest = shards_recipe_args(rest)
        argv = ["check"] + rest
        how = "checked (trainrun " + " ".join(shlex.quote(a) for a in argv) + ")"
    key = (tuple(argv), tuple(sorted(env.items())))
    if key not in _ran:
        r = run([TRAINRUN] + argv, env={**os.environ, **env, "HF_HUB_OFFLINE": "1"})
        _ran[key] = (r.returncode, r.stderr.strip(), r.stdout)
    code, err, out = _ran[key]
    if code != 0:
        failures.append(f"{page}:{line}: {command}\n  trainrun {' '.join(argv)}: exit {code}\n  {err}")
        how = "FAILED " + how
    elif training and (problem := run_folder_problem(args, out)):
        failures.append(f"{page}:{line}: {command}\n  {problem}")
        how = "FAILED " + how
    say(page, line, how, command)


# The demo's own command, which after `make demo` (tests/support/finished_demo.h) finds its run
# finished: the one training command a page may show that trains nothing there.
DEMO = ["recipes/quickstart.yaml"]


def run_folder_problem(args, out):
    """What `check` says a training command would do with its run folder, when that is not to
    train: another job's folder (refused, exit 2) or a finished run (nothing trained)."""
    m = re.search(r"^run folder: (.*)$", out, re.M)
    if not m:
        return "check printed no 'run folder:' line"
    plan = m.group(1)
    if plan.startswith("refuse"):
        return "in this folder the run would be refused: " + plan
    if plan.startswith("nothing") and list(args) != DEMO:
        return "in this folder the run would train nothing: " + plan
    return None


_torchrun = []  # (page, line, command, options): parsed together at the end (importing torch takes seconds)


def torchrun_options(page, line, command, words):
    _torchrun.append((page, line, command, words))
    return True


def parse_torchrun_options():
    code = (
        "import json, sys\nfrom torch.distributed.run import get_args_parser\n"
        "for i, words in enumerate(json.load(sys.stdin)):\n"
        "    try:\n        get_args_parser().parse_args(words)\n"
        "    except SystemExit:\n        print(i)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], input=json.dumps([t[3] for t in _torchrun]),
                       capture_output=True, text=True, cwd=WORK)
    bad = {int(i) for i in r.stdout.split()}
    if r.returncode != 0:
        failures.append(f"torchrun's parser did not run: {r.stderr.strip()}")
    for i, (page, line, command, _) in enumerate(_torchrun):
        if i in bad:
            failures.append(f"{page}:{line}: torchrun's parser refuses the options of: {command}\n  {r.stderr.strip()}")


def handle(page, line, command, env=None):
    env = dict(env or {})
    words = shlex.split(command)
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    if not words:
        return
    head = words[0]
    if head == "torchrun" or words[:2] == ["python3", "tests/py/torchrun.py"]:
        opts = words[1:] if head == "torchrun" else words[2:]
        torchrun_options(page, line, command, opts)
        if "train.py" in opts:
            say(page, line, "torchrun options parsed; not run (" + TIMM_TRAIN_PY + ")", command)
            return
        args = trainrun_args(opts)
        if args is None:
            failures.append(f"{page}:{line}: torchrun without trainrun: {command}")
            return
        return check_trainrun(page, line, command + "  [torchrun options parsed by torch]", args, env)
    if head in ("srun", "mpirun"):
        args = trainrun_args(words)
        if args is None:
            failures.append(f"{page}:{line}: {head} without trainrun: {command}")
            return
        return check_trainrun(page, line, command, args, env)
    args = trainrun_args(words[:1])
    if args is not None:
        return check_trainrun(page, line, command, words[1:], env)
    if head == "scripts/tiled-fashion-mnist.py":  # makes the multi-label page's data: run as written
        r = run([sys.executable, os.path.join(SRC, head)] + words[1:])
        if r.returncode != 0:
            failures.append(f"{page}:{line}: {command}: exit {r.returncode}: {r.stderr.strip()}")
        say(page, line, "ran" if r.returncode == 0 else "FAILED ran", command)
        return
    if head == "make":
        target = [w for w in words[1:] if "=" not in w] or ["demo"]
        r = run(["make", "-n", "-C", SRC] + target)
        ok = r.returncode == 0
        if not ok:
            failures.append(f"{page}:{line}: {command}: make -n: {r.stderr.strip()}")
        say(page, line, "checked (make -n)" if ok else "FAILED make -n", command)
        return
    if words[:3] == ["cd", "build", "&&"] and "ctest" in words:
        label = words[words.index("-L") + 1]
        r = run(["ctest", "-N", "-L", label], cwd=BUILD)
        m = re.search(r"Total Tests: (\d+)", r.stdout)
        ok = r.returncode == 0 and m and int(m.group(1)) > 0
        if not ok:
            failures.append(f"{page}:{line}: {command}: ctest -N -L {label} lists no test")
        say(page, line, f"checked (ctest -N -L {label}: {m.group(1) if m else 0} tests)", command)
        return
    bare = " ".join(words)
    for pattern, why in NOT_RUN:
        if re.search(pattern, command) or re.search(pattern, bare):
            if pattern.startswith("^scripts/gpu-check"):
                r = run(["bash", "-n", os.path.join(SRC, "scripts/gpu-check.sh")])
                if r.returncode != 0:
                    failures.append(f"{page}:{line}: bash -n scripts/gpu-check.sh: {r.stderr}")
            say(page, line, "not run (" + why + ")", command)
            return
    failures.append(f"{page}:{line}: no rule runs or checks this command: {command}")
    say(page, line, "NOT TAKEN", command)


def main():
    os.makedirs(WORK, exist_ok=True)
    # A working folder laid out as a clone: the pages' relative paths resolve in it; `recipe.yaml`
    # (the reader's own recipe) is the quickstart's, without its name.
    for name in ("recipes", "docs", "examples", "scripts", "tests"):
        link = os.path.join(WORK, name)
        if not os.path.lexists(link):
            os.symlink(os.path.join(SRC, name), link)
    if not os.path.lexists(os.path.join(WORK, "build")):
        os.symlink(BUILD, os.path.join(WORK, "build"))
    # Named as a reader's own file is, by its stem (runs/recipe), not the demo's `quickstart`.
    with open(os.path.join(WORK, "recipe.yaml"), "w") as f:
        f.write(re.sub(r"(?m)^name: quickstart\n", "", open(os.path.join(SRC, "recipes/quickstart.yaml")).read()))
    count = 0
    for page, start, body in blocks():
        if body and body[0].startswith("#!/bin/bash"):
            script = os.path.join(WORK, "block.sh")
            open(script, "w").write("\n".join(body) + "\n")
            r = run(["bash", "-n", script])
            if r.returncode != 0:
                failures.append(f"{page}:{start}: bash -n: {r.stderr}")
            say(page, start, "checked (bash -n)", "the batch script")
            env = {}
            for line, command in commands(start, body):
                m = re.match(r"^export ([A-Z_]+)=(\S+)$", command)
                if m:
                    env[m.group(1)] = m.group(2)
                if command.startswith("srun "):
                    handle(page, line, command, env)
                    count += 1
            continue
        for line, command in commands(start, body):
            handle(page, line, command)
            count += 1
    parse_torchrun_options()
    print("\n".join(report))
    print(f"{count} commands on the pages; {len(failures)} failed or not taken")
    for f in failures:
        print("FAIL " + f, file=sys.stderr)
    sys.exit(1 if failures or count == 0 else 0)


main()
