"""The ranges a port or a number of days may take, shared by the settings and the CLI's options.

Kept apart from `governance.config` so a command's options can name them without importing the settings.
"""

from __future__ import annotations

__all__ = ["MAX_DAYS", "MAX_PORT"]

MAX_PORT = 65535
# the longest a setting or option in days may be (a century): past it, date arithmetic overflowed mid-run
MAX_DAYS = 36500
