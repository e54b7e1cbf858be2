"""The email front door (``platform/email``): IMAP to read (IDLE, or polling), SMTP to answer, one
session per mail thread."""

from actors.platform.email.bot import EMAIL_SOURCE, EMAIL_TOOLSETS, EmailBot, email_session_id

__all__ = ["EMAIL_SOURCE", "EMAIL_TOOLSETS", "EmailBot", "email_session_id"]
