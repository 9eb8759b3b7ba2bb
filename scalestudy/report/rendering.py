"""The one self-contained HTML report, rendered from the studies' views.

Rendered with Jinja2 (autoescape on: names and reasons come from users and
programs); figures are inlined as data URIs, so the file makes no requests. The
template says everything in words; its `num` filter formats a number the views left
as one (a dash where it is missing).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import jinja2

from scalestudy.records import write_text_atomic
from scalestudy.sections import part
from scalestudy.sections.formatting import fmt

TEMPLATES = Path(__file__).with_name("templates")


def partial(name: str) -> str:
    """A section's template, beside its contract: its partial ("energy"), or its line of
    the first table ("energy/line")."""
    name, _, which = name.partition("/")
    file = {"line": "line.html.j2", "answer": "answer.html.j2"}.get(which, "partial.html.j2")
    return Path(part(name, "contract").__file__).with_name(file).read_text()


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        # a section's partial by "section:<name>" (scalestudy.sections)
        loader=jinja2.ChoiceLoader(
            [
                jinja2.FileSystemLoader(TEMPLATES),
                jinja2.PrefixLoader({"section": jinja2.FunctionLoader(partial)}, delimiter=":"),
            ]
        ),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = fmt
    return env


def render(title: str, studies: list[dict], not_in_config: list[str] = ()) -> str:
    """`not_in_config`: results folders of studies the config no longer names."""
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        environment()
        .get_template("report.html.j2")
        .render(title=title, studies=studies, generated=generated, not_in_config=not_in_config)
    )


def write_report(path: Path, title: str, studies: list[dict], not_in_config=()) -> None:
    write_text_atomic(path, render(title, studies, not_in_config))
