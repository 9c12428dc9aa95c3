"""verl reward for webgrpo's keywords task: every required word used (1) in one sentence (0.5).

The ground truth is the item's answer as JSON: the list of required words.
"""
import json
import re
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


_WORD = re.compile(r"[a-z]+")
_STOP = re.compile("[.!?]+(?:" + _text.WS + "|\\Z)")
_SPACE = re.compile(_text.WS + "+")


def _words(ground_truth):
    try:
        words = json.loads(ground_truth)
    except ValueError:
        return None
    return words if isinstance(words, list) and all(isinstance(w, str) for w in words) else None


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    words = _words(ground_truth)
    used = None
    if words is not None:
        present = set(_WORD.findall(solution_str.lower()))
        used = sum(1 for w in words if w in present) / len(words)
    reply = _text.trim(solution_str)
    sentences = [s for s in _STOP.split(reply) if _text.trim(s) != ""]
    one = 1 if len(sentences) == 1 and reply[-1:] in (".", "!", "?") and reply != "" and len(_SPACE.split(reply)) <= 40 else 0
    return _text.combined([(1, used), (0.5, one)])