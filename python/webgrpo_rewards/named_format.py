"""verl reward for webgrpo's named-format task: exact (1) and edit-distance similarity to the answer (0.5)."""
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


def _exact(solution_str, ground_truth):
    return None if ground_truth == "" else (1 if _text.squash(solution_str) == ground_truth else 0)


def _similar(solution_str, ground_truth):
    return None if ground_truth == "" else _text.similarity(_text.squash(solution_str), ground_truth)


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return _text.combined([(1, _exact(solution_str, ground_truth)), (0.5, _similar(solution_str, ground_truth))])
