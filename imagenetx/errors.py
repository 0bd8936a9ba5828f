"""The one exception type a user mistake raises."""


class ImageNetXError(Exception):
    """A user mistake: the message names the input and how to fix it.

    The command line prints the message alone (no traceback) and exits with
    status 2. Library functions raise it before they write anything, so the
    dataset is left as it was.
    """
