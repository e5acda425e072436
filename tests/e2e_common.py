"""What the end-to-end scripts share: the exit statuses of docs/cli.md, failure collection and
running the binary."""
import subprocess
import sys

EXIT_USAGE, EXIT_BAD_INPUT, EXIT_DEVICE_STOP = 64, 65, 66

failures = []


def check(cond, what):
    """Records a failure (and prints it) unless cond holds; returns cond."""
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def run(vx, args, timeout=300):
    p = subprocess.run([vx, *args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr
