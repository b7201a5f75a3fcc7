"""The package's exceptions; the extension raises UserError and InternalError through these."""


class UserError(Exception):
    """The input cannot be taken: a bad model, option or decision. `file`, `node` and `reason`
    say where and why (empty when not known), as the command line prints them."""

    def __init__(self, message, file="", node="", reason=""):
        super().__init__(message)
        self.file = file
        self.node = node
        self.reason = reason or message


class EditRefused(UserError):
    """An edit the planner would not apply; `edit` is the edit in words, `reason` why."""

    def __init__(self, edit, reason):
        super().__init__(f"{edit}: refused: {reason}", "", "", reason)
        self.edit = edit


class InternalError(Exception):
    """A broken invariant inside the compiler: always a bug, never the user's input."""


def _install():
    from . import _core

    _core._set_error_types(UserError, InternalError)
