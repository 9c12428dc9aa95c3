"""Scores cases as verl's reward loop does: each reward file loaded by its path
(verl's get_custom_reward_fn: spec_from_file_location, then getattr compute_score) and called
with verl's keyword arguments. Cases come as JSON on stdin, scores go out as JSON on stdout."""
import importlib.util
import json
import sys

functions = {}


def load(path):
    if path not in functions:
        spec = importlib.util.spec_from_file_location("custom_module", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["custom_module"] = module
        spec.loader.exec_module(module)
        functions[path] = getattr(module, "compute_score")
    return functions[path]


cases = json.load(sys.stdin)
scores = []
for case in cases:
    score = load(case["path"])(data_source=case["data_source"], solution_str=case["solution_str"], ground_truth=case["ground_truth"], extra_info=case["extra_info"])
    if not isinstance(score, float):
        raise TypeError("%s returned %r, not a float" % (case["path"], score))
    scores.append(score)
json.dump(scores, sys.stdout)
