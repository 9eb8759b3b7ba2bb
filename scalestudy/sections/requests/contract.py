"""What to ask the scheduler for, per point: what analysis.json holds under "requests".
Its parts are the shared contract's (scalestudy.contract.Requests): the time to result
and the cluster facts are made from them."""

from scalestudy.contract import Requests

DATA = Requests
