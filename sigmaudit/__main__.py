"""``python -m sigmaudit``."""

import sys

try:
    from sigmaudit.cli import run
except KeyboardInterrupt:  # a Ctrl-C before the CLI installed its handlers: one line, exit 2 (issue 36 item 26)
    sys.stderr.write("sigmaudit: error: interrupted (SIGINT)\n")
    sys.exit(2)

run()
