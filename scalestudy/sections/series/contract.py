"""Each series' scaling models: what analysis.json holds under "series". Its parts are
the shared contract's (scalestudy.contract.SeriesFit): the answers are made from them."""

from scalestudy.contract import SeriesFit

DATA = list[SeriesFit]
