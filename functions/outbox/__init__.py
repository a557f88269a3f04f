"""The outbox's relay: the rows `state.outbox` keeps, sent to Inngest or run here, under leases.

`delivery` claims due rows, sends them (inline after a request, and by the drainer the app runs) or hands
them to dev mode's runner, and records each outcome; `holders` names the processes that hold a row's lease
and tells a dead one on this machine. The table's statements stay in `state.outbox`: `functions` holds no
SQL, and nothing below `functions` may import this room. This `__init__` imports nothing.
"""
