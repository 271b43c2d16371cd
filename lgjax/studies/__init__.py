"""The studies, one package each on the shared core; each declares its commands and its
reproducible experiments once, in its `__init__` (`STUDY`)."""

from lgjax.studies import contract, implicit_bias, realizability

STUDIES = {s.name: s for s in (implicit_bias.STUDY, realizability.STUDY, contract.STUDY)}
