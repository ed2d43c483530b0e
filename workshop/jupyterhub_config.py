"""JupyterHub configuration of the gradlab workshop hub on one machine (``make hub``).

Everything is set from ``GRADLAB_HUB_*`` variables (see workshop/README.md); the
rules live in the ``gradlab_hub`` package next to this file.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gradlab_hub.config import apply
from gradlab_hub.settings import LearnerEnv, Settings, SettingsError

settings = Settings.from_env()
learner_env = LearnerEnv.load(settings.prefix)
if learner_env is None:
    raise SettingsError(f"no learner environment in {settings.prefix}; run: make hub-deps")

apply(get_config(), settings, learner_env)  # type: ignore[name-defined]  # noqa: F821
