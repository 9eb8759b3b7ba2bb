"""What the runs received, in the report, before the environment."""

from scalestudy.sections.formatting import label, shallow
from scalestudy.sections.received.contract import Received

# where the report shows it: before the environment
PLACE = "environment"


def view(received: list[Received]) -> list[dict] | None:
    return [
        shallow(r) | {"got": [[label(c), values] for c, values in r.got]} for r in received
    ] or None
