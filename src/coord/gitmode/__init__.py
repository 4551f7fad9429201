"""Git mode: the design-document protocol with main's linear history as the lock, no daemon.

Teams whose agents share only a git remote (several machines, CI runners) run the protocol of
``tests/specs/harness-v2.md`` ("Claiming and completing a package") by hand; ``coord git``
makes it exact. See ``coord.gitmode.protocol`` for the commands and ``coord.gitmode.settings``
for where the settings live; ``coord.gitmode.history`` lints a range of commits for CI.
"""
