"""post_tool hook: strip trailing whitespace from the file a write_file call wrote, and
tell the model (its `context` is appended to the call's observation)."""

import json
import pathlib
import sys

call = json.load(sys.stdin)
if call["outcome"]["is_error"]:
    sys.exit(0)
path = pathlib.Path(call["workspace"], call["arguments"]["path"])
text = path.read_text(encoding="utf-8")
clean = "\n".join(line.rstrip() for line in text.split("\n"))
if clean != text:
    path.write_text(clean, encoding="utf-8")
    json.dump({"context": f"strip-trailing removed trailing whitespace from {path.name}"},
              sys.stdout)
