"""Reads webgrpo's exports as a Python consumer does, with pandas (and pyarrow where installed).

argv: a JSON object {"jsonl": {"<set>": [paths]}, "parquet": [paths]}. Prints JSON: each JSONL file's
column dtypes (pandas.read_json, lines=True, as JSON gives them), each set concatenated
(pandas.concat) with its dtypes, and each parquet file's rows (pandas.read_parquet), or why not.
"""
import json
import sys

import pandas

request = json.loads(sys.argv[1])
out = {"jsonl": {}, "concat": {}, "parquet": {}}
for name, paths in request["jsonl"].items():
    frames = []
    for path in paths:
        frame = pandas.read_json(path, lines=True, dtype=False)
        out["jsonl"][path] = {column: str(dtype) for column, dtype in frame.dtypes.items()}
        frames.append(frame)
    joined = pandas.concat(frames, ignore_index=True)
    out["concat"][name] = {"rows": len(joined), "dtypes": {column: str(dtype) for column, dtype in joined.dtypes.items()}}
try:
    import pyarrow  # noqa: F401 (pandas reads parquet through it)
except ImportError:
    out["parquet"] = "pyarrow is not installed"
else:
    for path in request["parquet"]:
        frame = pandas.read_parquet(path)
        out["parquet"][path] = json.loads(frame.to_json(orient="records"))
json.dump(out, sys.stdout)
