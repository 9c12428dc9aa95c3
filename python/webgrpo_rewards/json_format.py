"""verl reward for webgrpo's json-format task: valid JSON object (0.5), the schema (1) and the key names (0.25).

The ground truth is the item's answer as JSON: {"keys": {"name": "string", "legs": "number", ...}}.
"""
import json
import importlib.util as _util
import os as _os


def _sibling(name):
    # verl loads this file by its path (custom_reward_function.path), not as a package: its
    # helpers are loaded the same way, from the folder it sits in.
    spec = _util.spec_from_file_location("webgrpo_rewards_" + name, _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), name + ".py"))
    module = _util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_text = _sibling("_text")


def _typeof(value):
    """JavaScript's typeof of a parsed JSON value."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object"


def _keys(ground_truth):
    try:
        answer = json.loads(ground_truth)
    except ValueError:
        return None
    keys = answer.get("keys") if isinstance(answer, dict) else None
    return keys if isinstance(keys, dict) else None


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    ok, value = _text.parse_json_reply(solution_str)
    is_object = ok and isinstance(value, dict)
    keys = _keys(ground_truth)
    schema = named = None
    if keys is not None:
        wanted = list(keys)
        if is_object:
            right = sum(1 for k in wanted if k in value and _typeof(value[k]) == keys[k])
            extra = sum(1 for k in value if k not in keys)
            schema = max(0, (right - extra) / len(wanted))
        else:
            schema = 0
        named = sum(1 for k in wanted if "\"" + k + "\"" in solution_str) / len(wanted)
    return _text.combined([(0.5, 1 if is_object else 0), (1, schema), (0.25, named)])