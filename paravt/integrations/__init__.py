"""Optional integrations with external training frameworks.

Nothing under ``paravt`` outside this package imports them: ``paravt.integrations.verl`` needs
the ``verl`` extra (``pip install -e '.[verl]'``) and is loaded only by ``paravt train rl
--engine verl`` and by verl itself (agent loop, reward function).
"""
