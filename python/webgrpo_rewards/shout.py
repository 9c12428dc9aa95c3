"""verl reward for webgrpo's shout task: the share of the reply's characters that are capitals A-Z (no answer needed)."""
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


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return _text.combined([(1, _text.character_share(solution_str, lambda c: "A" <= c <= "Z"))])