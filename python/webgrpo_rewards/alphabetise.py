"""verl reward for webgrpo's alphabetise task: exact (1), format (0.5) and similarity (0.5) to the answer "Sorted: a, b, c"."""
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


_FORMAT = re.compile(r"Sorted: [a-z]+(?:, [a-z]+)*")


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    if ground_truth == "":
        return 0.0
    reply = _text.squash(solution_str)
    exact = 1 if reply == ground_truth else 0
    if not _FORMAT.fullmatch(reply):
        form = 0
    else:
        form = 1 if len(reply.split(", ")) == len(ground_truth.split(", ")) else 0.5
    return _text.combined([(1, exact), (0.5, form), (0.5, _text.similarity(reply, ground_truth))])