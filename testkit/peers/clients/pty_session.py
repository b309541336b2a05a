"""Runs a command with a pseudo-terminal as its stdin and stderr (and its
controlling terminal), stdout on a pipe (or on the terminal too, with
PTY_STDOUT=1 in the environment), and types into it as a person would.

    python3 pty_session.py STEPS_JSON -- COMMAND ARGS...

STEPS_JSON is a list of [expect, keys]: wait until `expect` appears on the
terminal (escape sequences removed) in what was drawn since the keys before,
then type `keys`. Prints one JSON object: the command's stdout, the terminal
transcript (escape sequences removed, and `raw` with them), its exit code and,
if a step was never met, which one.
"""

import fcntl
import json
import os
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time

STEP_TIMEOUT = 30.0
EXIT_TIMEOUT = 30.0
ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


def main():
    steps = json.loads(sys.argv[1])
    command = sys.argv[sys.argv.index("--") + 1 :]
    master, slave = os.openpty()
    # A real size: prompts are laid out to it (PTY_COLUMNS sets the width).
    columns = int(os.environ.get("PTY_COLUMNS", "200"))
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))

    def controlling_terminal():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    env = dict(os.environ, TERM="xterm")
    on_terminal = os.environ.get("PTY_STDOUT") == "1"
    child = subprocess.Popen(
        command,
        stdin=slave,
        stdout=slave if on_terminal else subprocess.PIPE,
        stderr=slave,
        preexec_fn=controlling_terminal,
        env=env,
    )
    os.close(slave)
    out = []
    reader = threading.Thread(target=lambda: out.append(child.stdout.read() if child.stdout else b""))
    reader.start()

    screen = bytearray()
    seen_from = 0
    failed = None

    def pump(deadline):
        """Reads what the terminal shows until the deadline; False at EOF."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            ready, _, _ = select.select([master], [], [], min(left, 0.1))
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    return False
                if not data:
                    return False
                screen.extend(data)
                return True

    for index, (expect, keys) in enumerate(steps):
        deadline = time.monotonic() + STEP_TIMEOUT
        open_ = True
        while expect.encode() not in ESCAPES.sub(b"", bytes(screen[seen_from:])):
            if time.monotonic() > deadline or not open_:
                failed = {"step": index, "expect": expect}
                break
            open_ = pump(deadline)
        if failed:
            break
        seen_from = len(screen)
        os.write(master, keys.encode())

    deadline = time.monotonic() + EXIT_TIMEOUT
    while child.poll() is None and time.monotonic() < deadline:
        if not pump(min(deadline, time.monotonic() + 0.2)):
            break
    try:
        code = child.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        child.kill()
        code = child.wait()
        failed = failed or {"step": len(steps), "expect": "exit"}
    while pump(time.monotonic() + 0.2):
        if not select.select([master], [], [], 0)[0]:
            break
    reader.join(timeout=10)
    print(
        json.dumps(
            {
                "stdout": (out[0] if out else b"").decode("utf-8", "replace"),
                "screen": ESCAPES.sub(b"", bytes(screen)).decode("utf-8", "replace"),
                "raw": bytes(screen).decode("utf-8", "replace"),
                "code": code,
                "failed": failed,
            }
        )
    )


if __name__ == "__main__":
    main()
