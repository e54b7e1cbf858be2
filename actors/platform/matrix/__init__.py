"""The Matrix bot front door (``platform/matrix``): the client-server API spoken directly over the
project's HTTP stack (sync long-poll in, ``PUT`` sends out); end-to-end encrypted rooms are not served."""

from actors.platform.matrix.bot import MATRIX_SOURCE, MATRIX_TOOLSETS, MatrixBot

__all__ = ["MATRIX_SOURCE", "MATRIX_TOOLSETS", "MatrixBot"]
