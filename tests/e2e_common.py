"""What the end-to-end scripts share: the exit statuses of docs/cli.md, failure collection and
running the binary."""
import os
import signal
import subprocess
import sys
import tempfile

EXIT_USAGE, EXIT_BAD_INPUT, EXIT_DEVICE_STOP = 64, 65, 66

failures = []


def finish():
    """The script's exit status: 1 after any failure (counted on stderr), else 0 ("ok")."""
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        return 1
    print("ok")
    return 0


def run_check(checks, which, *args):
    """Runs checks[which](*args, TMP) with a fresh temporary directory; the script's exit status."""
    if which not in checks:
        print("unknown check", which, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="vx-e2e-") as tmp:
        checks[which](*args, tmp)
    return finish()


def check(cond, what):
    """Records a failure (and prints it) unless cond holds; returns cond."""
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def run(vx, args, timeout=300):
    p = subprocess.run([vx, *args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def run_cmd(cmd, timeout=120, env=None, cwd=None):
    """Runs any command: (status, stdout, stderr)."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def line_of(path, text):
    """The number of the first line of path that holds text."""
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if text in line:
                return n
    raise SystemExit(f"{path}: no line with {text!r}")


def run_checks(checks):
    """The scripts' main: argv is VXREPLAY EXAMPLES_DIR SOURCE_DIR CHECK; runs checks[CHECK](vx, ex, src)."""
    vx, ex, src, what = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3], sys.argv[4]
    if what not in checks:
        print("unknown check", what, file=sys.stderr)
        return 2
    checks[what](vx, ex, src)
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        return 1
    print("ok")
    return 0


def stop_server(server, what):
    """Ends a `vxreplay view --serve` (or another server) with SIGINT, as a user's Ctrl-C: its status,
    or None (and a failed check) when it does not end within 30 s."""
    server.send_signal(signal.SIGINT)
    try:
        return server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        check(False, f"{what}: the server did not end on SIGINT")
        return None
