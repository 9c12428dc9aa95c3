"""verl reward for webgrpo's arithmetic task: correct (1), close (0.5) and number only (0.25); the answer is a number."""
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


_INTEGER = re.compile(r"-?[0-9]+")


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    answer = _text.js_number(ground_truth) if ground_truth != "" else None
    value = _text.last_number(solution_str)
    correct = close = None
    if answer is not None:
        correct = 1 if value == answer else 0
        close = 0 if value is None else max(0, 1 - abs(value - answer) / max(1, abs(answer)))
    only = 1 if _INTEGER.fullmatch(_text.trim(solution_str)) else 0
    return _text.combined([(1, correct), (0.5, close), (0.25, only)])