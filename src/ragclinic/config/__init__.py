"""Settings: the one settings object (settings.py), the knowledge base's settings file (files.py) and the backend
names the pluggable settings accept (names.py)."""

from ragclinic.config.files import SETTINGS_FILE
from ragclinic.config.settings import (KB_DEFINING, LEGACY_VALUES, TRACE_LEGACY_VALUES, Settings, read_settings_file,
                                       write_settings_file)

__all__ = ["KB_DEFINING", "LEGACY_VALUES", "TRACE_LEGACY_VALUES", "SETTINGS_FILE", "Settings", "read_settings_file",
           "write_settings_file"]
