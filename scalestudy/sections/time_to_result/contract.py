"""Time to result, the queue wait beside the run time: what analysis.json holds under
"time_to_result". Its parts are the shared contract's (scalestudy.contract.ResultTimes):
the answers' deadline is judged by them."""

from scalestudy.contract import ResultTimes

# None: times measured elsewhere (no jobs to queue)
DATA = ResultTimes | None
