"""verl reward for any of webgrpo's built-in tasks: routes on data_source to the task's own file.

Point verl at this one file for a dataset that mixes tasks:
    custom_reward_function.path=.../webgrpo_rewards/webgrpo.py custom_reward_function.name=compute_score
"""
import importlib.util as _util
import os as _os


TASKS = (
    "add-subtract", "alphabetise", "arithmetic", "copy-format", "count-letter", "digits",
    "first-letter", "json-format", "keywords", "named-format", "shout", "sort-words",
)
_loaded = {}


def _task(data_source):
    if data_source not in TASKS:
        raise NotImplementedError(
            "webgrpo has no built-in task %r; give exportParquet a dataSource of %s, or point verl's custom_reward_function at your own file." % (data_source, ", ".join(TASKS))
        )
    if data_source not in _loaded:
        path = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), data_source.replace("-", "_") + ".py")
        spec = _util.spec_from_file_location("webgrpo_rewards_" + data_source.replace("-", "_"), path)
        module = _util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _loaded[data_source] = module.compute_score
    return _loaded[data_source]


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return _task(data_source)(data_source, solution_str, ground_truth, extra_info)
