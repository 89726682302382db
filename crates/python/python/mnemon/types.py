"""The types of the operations' answers (``TypedDict`` classes such as
:class:`~mnemon.types.Readiness`) and of the enumerations their arguments take (``Literal``
aliases such as :data:`~mnemon.types.TaskStatus`), for annotating code that uses the domain
groups::

    from mnemon.types import Readiness

    def ready(ns: mnemon.Namespace, task: str) -> bool:
        answer: Readiness = ns.tasks.can_start(task)
        return answer["ready"]

Generated from the operation catalogue's schemas (``scripts/gen-python.py``).
"""

from ._types import *  # noqa: F401,F403
from ._types import __all__  # noqa: F401
