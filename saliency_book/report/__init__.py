"""One agent's report (``saliency-study report AGENT --out DIR``): the book's chapters, executed for that agent.

* :mod:`.plan`: the inputs, checked before anything runs (:func:`plan_report`, :class:`ReportPlan`);
* :mod:`.build`: the estimate, the sweep and the small book (:func:`build_report`);
* :mod:`.page`: what the report's front page (``notebooks/_agent_report.py``) computes and shows;
* :mod:`.command`: the command line (:func:`add_report_parser`).
"""

from __future__ import annotations

from .build import REPORT_CHAPTERS, REPORT_PAGE, ReportBuild, build_report, report_specs
from .command import add_report_parser, run_report
from .plan import ReportPlan, plan_report

__all__ = ["ReportPlan", "plan_report", "ReportBuild", "build_report", "report_specs", "REPORT_PAGE",
           "REPORT_CHAPTERS", "add_report_parser", "run_report"]
