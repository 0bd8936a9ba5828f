"""The scenarios of FiftyOne's Model Evaluation panel, as it stores them.

The panel keeps a dataset's scenarios in the execution store
``model_evaluation_panel_builtin`` of that dataset, key ``scenarios``: a
dict ``{id: {"id", "name", "type", "subsets", "field"?}}``, the id a string
ObjectId (FiftyOne's ``plugins/utils/model_evaluation``: ``get_scenarios``
and ``set_scenarios``). Which of them this project wrote is kept apart, in
its own store ``imagenetx_scenarios``, so the panel's entries stay exactly
as its "Configure scenario" operator writes them and a user's own scenarios
are never touched.
"""

from typing import Dict

from bson import ObjectId
from fiftyone.operators.store import ExecutionStore

#: the Model Evaluation panel's store and the key of its scenarios
PANEL_STORE = "model_evaluation_panel_builtin"
SCENARIOS_KEY = "scenarios"

#: this project's record of the scenarios it wrote: ``{id: name}``
OWN_STORE = "imagenetx_scenarios"
OWN_KEY = "written"


def _store(dataset, name: str) -> ExecutionStore:
    return ExecutionStore.create(name, dataset._doc.id)


def read_scenarios(dataset) -> Dict[str, dict]:
    """The panel's scenarios of a dataset, ``{id: scenario}``."""
    return dict(_store(dataset, PANEL_STORE).get(SCENARIOS_KEY) or {})


def write_scenarios(dataset, scenarios: Dict[str, dict]) -> None:
    """Replaces the panel's scenarios of a dataset."""
    _store(dataset, PANEL_STORE).set(SCENARIOS_KEY, dict(scenarios))


def written_scenarios(dataset) -> Dict[str, str]:
    """The scenarios this project wrote on a dataset, ``{id: name}``."""
    return dict(_store(dataset, OWN_STORE).get(OWN_KEY) or {})


def record_written(dataset, written: Dict[str, str]) -> None:
    """Records which scenarios this project wrote, ``{id: name}``."""
    _store(dataset, OWN_STORE).set(OWN_KEY, dict(written))


def new_scenario_id() -> str:
    """A new scenario id, as the panel makes one."""
    return str(ObjectId())
