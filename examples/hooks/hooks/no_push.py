"""pre_tool hook: refuse `git push` (exit 2, the reason on stderr); anything else passes."""

import json
import shlex
import sys

call = json.load(sys.stdin)
args = call.get("arguments", {})
words = args.get("argv") or shlex.split(str(args.get("line", "")))
if "git" in words and "push" in words[words.index("git"):]:
    print("pushing is for people: open a pull request instead", file=sys.stderr)
    sys.exit(2)
