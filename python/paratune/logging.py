"""paratune.logging: Optuna's logging helpers (optuna.logging) over the standard logger "paratune", on which
optimize() and tune() log one line per trial: ``paratune.logging.set_verbosity(paratune.logging.WARNING)``
keeps the failures only."""

import logging as _logging

CRITICAL = _logging.CRITICAL
FATAL = _logging.FATAL
ERROR = _logging.ERROR
WARNING = _logging.WARNING
WARN = _logging.WARN
INFO = _logging.INFO
DEBUG = _logging.DEBUG

_logger = _logging.getLogger("paratune")


def set_verbosity(verbosity):
    """The level of the "paratune" logger (INFO by default: a line per trial)."""
    _logger.setLevel(verbosity)


def get_verbosity():
    """The level of the "paratune" logger."""
    return _logger.getEffectiveLevel()


def disable_default_handler():
    """Stops paratune's own stderr handler (a program's logging configuration still gets the records)."""
    for handler in _logger.handlers:
        handler.setLevel(_logging.CRITICAL + 1)


def enable_default_handler():
    """Starts paratune's own stderr handler again."""
    for handler in _logger.handlers:
        handler.setLevel(_logging.NOTSET)


def get_logger(name):
    """The standard logger `name` (Optuna's get_logger: its tutorials log their own lines with it)."""
    return _logging.getLogger(name)


def enable_propagation():
    """Records of the "paratune" logger reach the root logger's handlers too (the default)."""
    _logger.propagate = True


def disable_propagation():
    """Records of the "paratune" logger stay with its own handler."""
    _logger.propagate = False
