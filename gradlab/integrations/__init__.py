"""gradlab inside the training frameworks: callbacks that track the first steps of a run.

* :mod:`gradlab.integrations.lightning`: ``TrackCallback``, a PyTorch Lightning ``Callback``;
* :mod:`gradlab.integrations.huggingface`: ``TrackCallback``, a Hugging Face ``TrainerCallback``.

Importing this package imports no framework; importing one of its modules imports that
framework, or raises an ImportError that names the extra to install
(``pip install "torch-gradlab[frameworks]"``). ``python -m gradlab run`` needs neither:
it tracks a script that trains with any of them as it stands.
"""

__all__: list[str] = []
