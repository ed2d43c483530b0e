"""The gradlab workshop hub: JupyterHub on one machine for a room of learners.

Modules, one concept each:

- :mod:`gradlab_hub.settings`: what an instructor can set (``GRADLAB_HUB_*``), checked.
- :mod:`gradlab_hub.config`: the settings applied to JupyterHub's configuration.
- :mod:`gradlab_hub.accounts`: first-use accounts behind a workshop code; one Unix
  account per learner, home directories only their owner can read.
- :mod:`gradlab_hub.limits`: per-learner memory and CPU limits through Linux cgroups.
- :mod:`gradlab_hub.spawner`: the local-process spawner with those limits.
- :mod:`gradlab_hub.learner_env`: the Python environment learners' servers run in.
- :mod:`gradlab_hub.hub`: ``make hub``.
- :mod:`gradlab_hub.outputs`, :mod:`gradlab_hub.kernel`, :mod:`gradlab_hub.loadtest`:
  ``make hub-load``: N learners run notebook 01 at once.
"""
